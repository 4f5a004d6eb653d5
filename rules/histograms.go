package rules

import (
	"fmt"

	"github.com/vllm-prober/vllm-prober/collector/metricname"
)

// A probe's `histograms:` and `classic_buckets:` (docs/design.md, Series
// budget) decide what the rules may read: a rule that needs a histogram a
// probe left out is dropped for that probe with a warning, and one that
// reads a native-only histogram uses the native form of
// histogram_quantile (no le label, no _bucket series).

// histogramForms says in which form the pairs a rule reads export a
// histogram: with classic buckets, native only, or both among them.
type histogramForms struct{ classic, native bool }

// formsOf returns the forms in which the pairs export metric.
func (p *plan) formsOf(metric string) histogramForms {
	var f histogramForms
	for _, pp := range p.pairs {
		if !pp.Hist.Has(metricname.SelectedBy[metric]) {
			continue
		}
		if pp.Hist.Classic {
			f.classic = true
		} else {
			f.native = true
		}
	}
	return f
}

// quantileExpr is the q-quantile of metric over window w, summed by the
// labels of by: from its classic buckets, from its native histograms, or,
// when pairs export both forms, the classic quantile where there are
// buckets and the native one for the series that have none (`or` matches
// on the by labels). The result is parenthesised when it has an `or`, so
// a comparison after it applies to both.
func quantileExpr(q, metric, sel, by, w string, f histogramForms) string {
	classic := fmt.Sprintf("histogram_quantile(%s, sum by (%s, le) (rate(%s_bucket%s[%s])))", q, by, metric, sel, w)
	native := fmt.Sprintf("histogram_quantile(%s, sum by (%s) (rate(%s%s[%s])))", q, by, metric, sel, w)
	switch {
	case f.classic && f.native:
		return "(\n" + classic + "\nor\n" + native + "\n)"
	case f.native:
		return native
	}
	return classic
}

// warnUncovered warns, for each pair that left out metric's histogram,
// that alert does not judge it.
func (p *plan) warnUncovered(metric, alert string) {
	name := metricname.SelectedBy[metric]
	for i := range p.pairs {
		pp := &p.pairs[i]
		if !pp.Hist.Has(name) {
			p.warn(pp, alert, "not judged for this probe: its histograms leave out %s (%s); add %s to them to get the alert", name, metric, name)
		}
	}
}

// warnTargetsWithout warns, for each target none of whose probes exports
// metric, that alert cannot fire for it.
func (p *plan) warnTargetsWithout(metric, alert string) {
	name := metricname.SelectedBy[metric]
	for _, t := range p.targets {
		has := false
		for _, pp := range p.pairs {
			has = has || (pp.Target == t.Name && pp.Hist.Has(name))
		}
		if !has {
			p.warnings = append(p.warnings, Warning{Target: t.Name, Alert: alert,
				Message: fmt.Sprintf("not judged for this target: none of its probes' histograms includes %s (%s)", name, metric)})
		}
	}
}

// fed reports whether the generated promtool tests can feed pp's histogram
// name: it is selected with classic buckets. promtool 2.42 (Debian 12)
// cannot write native histogram input series, so the scenarios of
// native-only histograms are left out of the generated tests; the e2e
// tests run them through a real Prometheus.
func (pp pairPlan) fed(name string) bool { return pp.Hist.Classic && pp.Hist.Has(name) }

// firstFed returns the first pair the tests can feed name for, and
// whether there is one.
func (tb *testBuilder) firstFed(name string, target string) (pairPlan, bool) {
	for _, pp := range tb.p.pairs {
		if pp.fed(name) && (target == "" || pp.Target == target) {
			return pp, true
		}
	}
	return pairPlan{}, false
}
