package promtest

import "github.com/vllm-prober/vllm-prober/rules/internal/plan"

// fed reports whether the generated promtool tests can feed pp's histogram
// name: it is selected with classic buckets. promtool 2.42 (Debian 12)
// cannot write native histogram input series, so the scenarios of
// native-only histograms are left out of the generated tests; the e2e
// tests run them through a real Prometheus.
func fed(pp plan.Pair, name string) bool { return pp.Hist.Classic && pp.Hist.Has(name) }

// firstFed returns the first pair the tests can feed name for, and
// whether there is one.
func (tb *testBuilder) firstFed(name string, target string) (plan.Pair, bool) {
	for _, pp := range tb.p.Pairs {
		if fed(pp, name) && (target == "" || pp.Target == target) {
			return pp, true
		}
	}
	return plan.Pair{}, false
}
