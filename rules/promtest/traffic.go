package promtest

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/vllm-prober/vllm-prober/collector/metricname"
	"github.com/vllm-prober/vllm-prober/rules"
	"github.com/vllm-prober/vllm-prober/rules/internal/plan"
)

// Outcomes of test traffic: "disposition/reason" (reason "" for accepted)
// or outInFlight for a request offered and not ended.
const (
	outAccepted = "accepted/"
	outInFlight = "in_flight"
	outHTTP5xx  = "server_failure/http_5xx"
	outConnect  = "server_failure/connect"
	outShed     = "cancelled/" + plan.ReasonInFlightCap
	outShutdown = "cancelled/shutdown"
	outTimeout  = "client_timeout/timeout"
	outLatency  = "latency_failure/latency"
	outQuality  = "quality_failure/quality"
)

// testDispositions are the values of the disposition label; like the
// collector, the test series carry every one, at 0 when unused.
var testDispositions = []string{"server_failure", "client_timeout", "cancelled", "quality_failure", "latency_failure", "accepted"}

// phase is a run of steps in which a pair's requests end the same way:
// ends holds requests per step by outcome.
type phase struct {
	steps int
	ends  map[string]float64
}

// traffic is one pair's requests, phase after phase from step 1.
type traffic []phase

func healthyTraffic(steps int) traffic {
	return traffic{{steps, map[string]float64{outAccepted: requestsPerStep}}}
}

// mixed is requestsPerStep requests per step of which the part given
// ends as out, the rest accepted.
func mixed(steps int, out string, part float64) phase {
	n := float64(requestsPerStep)
	return phase{steps, map[string]float64{outAccepted: n * (1 - part), out: n * part}}
}

// sortedKeys makes sums over outcomes independent of map order, so the
// rendered tests are byte for byte the same every time.
func sortedKeys(m map[string]float64) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func (tr traffic) steps() int {
	n := 0
	for _, ph := range tr {
		n += ph.steps
	}
	return n
}

// window sums the requests per outcome of the w steps that end at step
// at, the increase a range of w steps sees there (fewer at the start).
func (tr traffic) window(at, w int) map[string]float64 {
	out := map[string]float64{}
	first, s := at-w+1, 0
	for _, ph := range tr {
		for i := 1; i <= ph.steps; i++ {
			if s+i >= first && s+i <= at {
				for k, v := range ph.ends {
					out[k] += v
				}
			}
		}
		s += ph.steps
	}
	return out
}

// acceptance is accepted over every ended request except those of the
// outcomes this scenario says leave the denominator.
func acceptance(c map[string]float64, leave ...string) float64 {
	var ended float64
	for _, k := range sortedKeys(c) {
		if k != outInFlight && !slices.Contains(leave, k) {
			ended += c[k]
		}
	}
	return c[outAccepted] / ended
}

// offered is every request of c, ended or in flight.
func offered(c map[string]float64) float64 {
	var n float64
	for _, k := range sortedKeys(c) {
		n += c[k]
	}
	return n
}

// share is the part of offered requests that ended as out.
func share(c map[string]float64, out string) float64 {
	var offered float64
	for _, k := range sortedKeys(c) {
		offered += c[k]
	}
	return c[out] / offered
}

// trafficSeries renders tr as the collector exports it: offered, every
// disposition and the failure reasons the rules read, plus any reason tr
// uses.
func (tb *testBuilder) trafficSeries(pp plan.Pair, tr traffic) []InputSeries {
	return tb.replicaTraffic(pp, "", tr)
}

// seriesLabels are the labels (after job and instance) of the series of
// one replica of pp; replica "" is the pair's own series (a gateway or
// static target: no replica label).
func seriesLabels(pp plan.Pair, replica string) string {
	l := fmt.Sprintf(",target=%q,probe=%q", pp.Target, pp.Probe)
	if replica != "" {
		l += fmt.Sprintf(",replica=%q", replica)
	}
	return l
}

// replicaTraffic is trafficSeries of one replica of pp; replica "" is
// the pair's own series (a gateway or static target: no replica label).
func (tb *testBuilder) replicaTraffic(pp plan.Pair, replica string, tr traffic) []InputSeries {
	l := seriesLabels(pp, replica)
	reasons := append(append(append([]string{}, plan.AbandonedReasons...), plan.CompletedFailureReasons...), plan.ReasonInFlightCap)
	var extra []string
	for _, ph := range tr {
		for k := range ph.ends {
			if _, r, _ := strings.Cut(k, "/"); r != "" && !slices.Contains(reasons, r) && !slices.Contains(extra, r) {
				extra = append(extra, r)
			}
		}
	}
	sort.Strings(extra)
	series := func(name, labels string, match func(out string) bool) InputSeries {
		var segs []segment
		for _, ph := range tr {
			inc := 0.0
			for _, k := range sortedKeys(ph.ends) {
				if match(k) {
					inc += ph.ends[k]
				}
			}
			segs = append(segs, segment{inc, ph.steps})
		}
		return tb.series(name, l+labels, counter(segs...))
	}
	ss := []InputSeries{series(metricname.RequestsOffered, "", func(string) bool { return true })}
	for _, d := range testDispositions {
		ss = append(ss, series(metricname.Requests, fmt.Sprintf(",disposition=%q", d), func(k string) bool { return strings.HasPrefix(k, d+"/") }))
	}
	for _, r := range append(reasons, extra...) {
		ss = append(ss, series(metricname.Failures, fmt.Sprintf(",reason=%q", r), func(k string) bool { return strings.HasSuffix(k, "/"+r) }))
	}
	return ss
}

// roundedExpr wraps a recorded series of a pair so promtool compares a
// whole number: round(scale * series).
func roundedExpr(record string, pp plan.Pair, scale float64) string {
	return fmt.Sprintf("round(%s * %s%s)", plan.FmtF(scale), record, pp.Selector())
}

func (tb *testBuilder) exprTest(at int, expr string, pp plan.Pair, v float64) ExprTest {
	return ExprTest{Expr: expr, EvalTime: tb.at(at), ExpSamples: []ExpSample{{
		Labels: fmt.Sprintf("{probe=%q, target=%q}", pp.Probe, pp.Target), Value: math.Round(v),
	}}}
}

// truth is what the recorded series of a pair must say: offered,
// completed and accepted requests per second, and the acceptance ratio.
type truth struct{ offered, completed, goodput, acceptance float64 }

// accountingTests check the pair's recorded series over window w at step
// at against t, to 1/1000 request per second and 1e-6 of acceptance.
func (tb *testBuilder) accountingTests(pp plan.Pair, at int, w time.Duration, t truth) []ExprTest {
	ws := plan.FmtDur(w)
	return []ExprTest{
		tb.exprTest(at, roundedExpr(rules.RecordOffered+ws, pp, 1e3), pp, 1e3*t.offered),
		tb.exprTest(at, roundedExpr(rules.RecordCompleted+ws, pp, 1e3), pp, 1e3*t.completed),
		tb.exprTest(at, roundedExpr(rules.RecordGoodput+ws, pp, 1e3), pp, 1e3*t.goodput),
		tb.exprTest(at, roundedExpr(rules.RecordAcceptance+ws, pp, 1e6), pp, 1e6*t.acceptance),
	}
}
