package rules

import (
	"fmt"
	"math"
	"strings"
	"time"
)

// fastBurn: the first pair with a page alert is healthy long enough to fill
// its longest page window, then fails every request until its first page
// pair fires; every page pair of that pair predicted to fire is expected.
func (tb *testBuilder) fastBurn() (TestGroup, bool) {
	for _, pp := range tb.p.pairs {
		var pages []burnPlan
		for _, b := range pp.Burns {
			if b.Severity == SeverityPage {
				pages = append(pages, b)
			}
		}
		if len(pages) == 0 {
			continue
		}
		forD := tb.p.scale(tb.p.o.PageFor)
		first, h := pages[0], 0
		for _, b := range pages {
			h = max(h, tb.steps(b.Long))
		}
		budget := 1 - pp.Objective
		d := max(tb.steps(first.Short), int(math.Ceil(1.5*first.Factor*budget*float64(tb.steps(first.Long))))) + tb.steps(forD)
		ss := append(tb.base(h+d, &pp), tb.pairSeries(pp, h, d)...)
		test := AlertTest{EvalTime: tb.at(h + d), Alertname: AlertFastBurn, ExpAlerts: []ExpAlert{}}
		for _, b := range pages {
			if !burning(b, pp.Objective, h, d-tb.steps(forD), tb) {
				continue
			}
			labels := map[string]string{"target": pp.Target, "probe": pp.Probe, "long_window": fmtDur(b.Long), "short_window": fmtDur(b.Short)}
			r, _ := tb.find(AlertFastBurn, labels)
			value := fmt.Sprintf("%.1f", burnRate(pp.Objective, h, d, tb.steps(b.Long)))
			test.ExpAlerts = append(test.ExpAlerts, expected(r, labels, value))
		}
		return tb.group(fmt.Sprintf("fast burn: %s/%s fails every request", pp.Target, pp.Probe), ss, test), true
	}
	return TestGroup{}, false
}

// burnRate is what the rules compute over a window of w steps at step
// ok+fail when the first ok steps accepted and the next fail steps failed.
func burnRate(objective float64, ok, fail, w int) float64 {
	bad := float64(min(fail, w))
	good := float64(min(ok+fail, w)) - bad
	accepted := good * requestsPerStep
	completed := accepted + bad*requestsPerStep
	return (1 - accepted/completed) / roundF(1-objective)
}

func burning(b burnPlan, objective float64, ok, fail int, tb *testBuilder) bool {
	if fail <= 0 {
		return false
	}
	return burnRate(objective, ok, fail, tb.steps(b.Long)) > b.Factor && burnRate(objective, ok, fail, tb.steps(b.Short)) > b.Factor
}

func (tb *testBuilder) firstLatency() (pairPlan, latencyPlan, bool) {
	for _, pp := range tb.p.pairs {
		if len(pp.Latency) > 0 {
			return pp, pp.Latency[0], true
		}
	}
	return pairPlan{}, latencyPlan{}, false
}

// histogram is a latency histogram with buckets at half, one and two
// times the SLO: every observation is in the first bucket, or (slow) in
// the one just above the SLO.
func (tb *testBuilder) histogram(pp pairPlan, l latencyPlan, slow bool, steps int) []InputSeries {
	slo := l.Threshold.Seconds()
	n := float64(requestsPerStep)
	var ss []InputSeries
	for _, le := range []float64{slo / 2, slo, 2 * slo, math.Inf(1)} {
		inc := n
		if slow && le <= slo {
			inc = 0
		}
		les := "+Inf"
		if !math.IsInf(le, 1) {
			les = fmtF(le)
		}
		ss = append(ss, tb.series(sloMetric[l.SLO]+"_bucket", fmt.Sprintf(",target=%q,probe=%q,le=%q", pp.Target, pp.Probe, les), counter(segment{inc, steps})))
	}
	return ss
}

func (tb *testBuilder) latency() (TestGroup, bool) {
	pp, l, ok := tb.firstLatency()
	if !ok {
		return TestGroup{}, false
	}
	steps := tb.steps(l.Window+tb.p.scale(tb.p.o.LatencyFor)) + 2
	ss := append(tb.base(steps, nil), tb.histogram(pp, l, true, steps)...)
	// histogram_quantile interpolates rank 0.99 inside the (slo, 2*slo] bucket.
	slo := l.Threshold.Seconds()
	rate := float64(requestsPerStep*tb.steps(l.Window)) / l.Window.Seconds()
	v := slo + (2*slo-slo)*(0.99*rate/rate)
	labels := map[string]string{"target": pp.Target, "probe": pp.Probe, "slo": l.SLO}
	r, _ := tb.find(AlertLatencyHigh, labels)
	test := AlertTest{EvalTime: tb.at(steps), Alertname: AlertLatencyHigh, ExpAlerts: []ExpAlert{expected(r, labels, humanizeDuration(v))}}
	return tb.group(fmt.Sprintf("latency: %s/%s p99 %s above its SLO", pp.Target, pp.Probe, l.SLO), ss, test), true
}

// ttftGap: the first pair's clients see a p50 TTFT of 1.5s while vLLM's
// own histogram for the target (with model_name and engine labels, as the
// prober re-exports it) has a p50 of 0.15s.
func (tb *testBuilder) ttftGap() TestGroup {
	pp := tb.p.pairs[0]
	lw := tb.p.scale(tb.p.o.LatencyWindow)
	steps := tb.steps(lw+tb.p.scale(tb.p.o.LatencyFor)) + 2
	ss := tb.base(steps, nil)
	n := float64(requestsPerStep)
	buckets := func(name, labels string, les []string, incs []float64) {
		for i, le := range les {
			ss = append(ss, tb.series(name, fmt.Sprintf("%s,le=%q", labels, le), counter(segment{incs[i], steps})))
		}
	}
	buckets("vllm_probe_time_to_first_token_seconds_bucket", fmt.Sprintf(",target=%q,probe=%q", pp.Target, pp.Probe),
		[]string{"1", "2", "+Inf"}, []float64{0, n, n})
	buckets("vllm:time_to_first_token_seconds_bucket", fmt.Sprintf(",target=%q,model_name=\"m\",engine=\"0\"", pp.Target),
		[]string{"0.1", "0.2", "+Inf"}, []float64{0, n, n})
	rate := n * float64(tb.steps(lw)) / lw.Seconds()
	client := 1 + (2-1)*(0.5*rate/rate)
	server := 0.1 + (0.2-0.1)*(0.5*rate/rate)
	labels := map[string]string{"target": pp.Target}
	r, _ := tb.find(AlertClientTTFTAboveServer, nil)
	test := AlertTest{EvalTime: tb.at(steps), Alertname: AlertClientTTFTAboveServer, ExpAlerts: []ExpAlert{expected(r, labels, humanizeDuration(client-server))}}
	return tb.group("client TTFT far above the server's: target "+pp.Target, ss, test)
}

func (tb *testBuilder) scrapeFailing() TestGroup {
	steps := tb.steps(tb.p.scale(tb.p.o.HealthFor)) + 2
	target := tb.p.pairs[0].Target
	ss := append(tb.base(steps, nil), tb.scrapeSeries(target, 0, steps))
	labels := map[string]string{"target": target}
	r, _ := tb.find(AlertScrapeFailing, nil)
	test := AlertTest{EvalTime: tb.at(steps), Alertname: AlertScrapeFailing, ExpAlerts: []ExpAlert{expected(r, labels, "")}}
	return tb.group("scrape failing: target "+target, ss, test)
}

func (tb *testBuilder) absent() TestGroup {
	steps := tb.steps(tb.p.scale(tb.p.o.HealthFor)) + 2
	ss := []InputSeries{{Series: `up{job="some-other-job",instance="x:1"}`, Values: fmt.Sprintf("1+0x%d", steps)}}
	labels := map[string]string{"job": tb.p.o.Job}
	r, _ := tb.find(AlertProberAbsent, nil)
	test := AlertTest{EvalTime: tb.at(steps), Alertname: AlertProberAbsent, ExpAlerts: []ExpAlert{expected(r, labels, "")}}
	return tb.group("prober absent", ss, test)
}

// expandTemplate replaces the few template actions the generated
// annotations use: {{ $labels.x }} and the value formats.
func expandTemplate(s string, labels map[string]string, value string) string {
	for k, v := range labels {
		s = strings.ReplaceAll(s, "{{ $labels."+k+" }}", v)
	}
	s = strings.ReplaceAll(s, valueFmt, value)
	return strings.ReplaceAll(s, durationFmt, value)
}

// humanizeDuration mirrors Prometheus' template function of that name.
func humanizeDuration(v float64) string {
	if v == 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return fmt.Sprintf("%.4gs", v)
	}
	if math.Abs(v) >= 1 {
		d := time.Duration(int64(v)) * time.Second
		if d >= time.Minute {
			s := int64(v)
			switch {
			case s >= 86400:
				return fmt.Sprintf("%dd %dh %dm %ds", s/86400, s/3600%24, s/60%60, s%60)
			case s >= 3600:
				return fmt.Sprintf("%dh %dm %ds", s/3600, s/60%60, s%60)
			default:
				return fmt.Sprintf("%dm %ds", s/60, s%60)
			}
		}
		return fmt.Sprintf("%.4gs", v)
	}
	prefix := ""
	for _, p := range []string{"m", "u", "n", "p", "f", "a", "z", "y"} {
		if math.Abs(v) >= 1 {
			break
		}
		prefix = p
		v *= 1000
	}
	return fmt.Sprintf("%.4g%ss", v, prefix)
}
