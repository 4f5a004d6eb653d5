package promtest

import (
	"fmt"
	"maps"
	"math"
	"strings"
	"time"

	"github.com/vllm-prober/vllm-prober/collector/metricname"
	"github.com/vllm-prober/vllm-prober/config"
	"github.com/vllm-prober/vllm-prober/rules"
	"github.com/vllm-prober/vllm-prober/rules/internal/plan"
)

// burnsOf are pp's burn alerts of severity sev.
func burnsOf(pp plan.Pair, sev string) []plan.Burn {
	var bs []plan.Burn
	for _, b := range pp.Burns {
		if b.Severity == sev {
			bs = append(bs, b)
		}
	}
	return bs
}

// firstWith returns the first pair with burn alerts of severity sev.
func (tb *testBuilder) firstWith(sev string) (plan.Pair, []plan.Burn, bool) {
	for _, pp := range tb.p.Pairs {
		if bs := burnsOf(pp, sev); len(bs) > 0 {
			return pp, bs, true
		}
	}
	return plan.Pair{}, nil, false
}

// longSteps is how many steps the longest long window of burns needs;
// fillSteps how many fill both windows of each.
func (tb *testBuilder) longSteps(burns []plan.Burn) int {
	n := 0
	for _, b := range burns {
		n = max(n, tb.steps(b.Long))
	}
	return n
}

func (tb *testBuilder) fillSteps(burns []plan.Burn) int {
	n := 0
	for _, b := range burns {
		n = max(n, tb.steps(b.Long+b.Short))
	}
	return n
}

// burn is the burn rate the rules compute for pp over window w at step
// at; leave are the outcomes the scenario says leave the denominator.
func (tb *testBuilder) burn(pp plan.Pair, tr traffic, at int, w time.Duration, leave []string) float64 {
	return (1 - acceptance(tr.window(at, tb.steps(w)), leave...)) / plan.RoundF(1-pp.Objective)
}

// burnTest expects every burn alert of burns whose both windows have been
// above the factor for its whole for: at the end of tr.
func (tb *testBuilder) burnTest(pp plan.Pair, alert string, burns []plan.Burn, tr traffic, forD time.Duration, leave ...string) AlertTest {
	return tb.seriesBurnTest(pp, alert, nil, burns, tr, forD, leave...)
}

// seriesBurnTest is burnTest of an alert whose labels add extra to the
// pair's (a fleet alert's replica).
func (tb *testBuilder) seriesBurnTest(pp plan.Pair, alert string, extra map[string]string, burns []plan.Burn, tr traffic, forD time.Duration, leave ...string) AlertTest {
	end := tr.steps()
	test := AlertTest{EvalTime: tb.at(end), Alertname: alert, ExpAlerts: []ExpAlert{}}
	for _, b := range burns {
		burning := end-tb.steps(forD) >= 1
		for s := end - tb.steps(forD); burning && s <= end; s++ {
			burning = tb.burn(pp, tr, s, b.Long, leave) > b.Factor && tb.burn(pp, tr, s, b.Short, leave) > b.Factor &&
				offered(tr.window(s, tb.steps(b.Long))) >= plan.HeldRatio*offered(tr.window(s, tb.steps(b.Short)))
		}
		if !burning {
			continue
		}
		labels := map[string]string{"target": pp.Target, "probe": pp.Probe, "long_window": plan.FmtDur(b.Long), "short_window": plan.FmtDur(b.Short)}
		r, _ := tb.find(alert, labels)
		maps.Copy(labels, extra)
		value := fmt.Sprintf("%.1f", tb.burn(pp, tr, end, b.Long, leave))
		test.ExpAlerts = append(test.ExpAlerts, expected(r, labels, value))
	}
	return test
}

// burnTraffic is pp healthy long enough to fill the longest window of
// burns, then a share of its requests ending as out for long enough that
// the first burn fires.
func (tb *testBuilder) burnTraffic(pp plan.Pair, burns []plan.Burn, out string, sh float64, forD time.Duration) traffic {
	h := tb.longSteps(burns)
	first := burns[0]
	budget := 1 - pp.Objective
	d := max(tb.steps(first.Short), int(math.Ceil(1.5*first.Factor*budget*float64(tb.steps(first.Long))/sh))) + tb.steps(forD)
	return traffic{healthyTraffic(h)[0], mixed(d, out, sh)}
}

// fastBurn: the first pair with a page alert fails every request (HTTP
// 500) until its first page pair fires.
func (tb *testBuilder) fastBurn() (Group, bool) {
	pp, pages, ok := tb.firstWith(plan.SeverityPage)
	if !ok {
		return Group{}, false
	}
	forD := tb.p.ForTime(tb.p.Options.PageFor)
	tr := tb.burnTraffic(pp, pages, outHTTP5xx, 1, forD)
	ss := append(tb.base(tr.steps(), &pp), tb.trafficSeries(pp, tr)...)
	// Its series have no replica label, as a static target's: the fleet
	// alerts stay quiet.
	return tb.group(fmt.Sprintf("fast burn: %s/%s fails every request", pp.Target, pp.Probe), ss,
		tb.burnTest(pp, rules.AlertFastBurn, pages, tr, forD),
		tb.quiet(rules.AlertReplicaFailing, tr.steps()), tb.quiet(rules.AlertGatewayFailing, tr.steps())), true
}

// overload: the first pair with a page alert sheds a share of its
// requests at max_in_flight; the rest are accepted. Shed requests are
// offered and not accepted, so they burn the budget and page, and the
// sustained share fires VLLMProbeInFlightCapReached.
func (tb *testBuilder) overload() (Group, bool) {
	pp, pages, ok := tb.firstWith(plan.SeverityPage)
	if !ok {
		return Group{}, false
	}
	maxF := 0.0
	for _, b := range pages {
		maxF = max(maxF, b.Factor)
	}
	sh := min(1, max(0.5, 2*maxF*(1-pp.Objective)))
	forD := tb.p.ForTime(tb.p.Options.PageFor)
	tr := tb.burnTraffic(pp, pages, outShed, sh, forD)
	capW, capFor := tb.capWindowFor(pp)
	if need := tb.steps(capW) + tb.steps(capFor) + 1; tr[1].steps < need {
		tr[1].steps = need
	}
	end := tr.steps()
	ss := append(tb.base(end, &pp), tb.trafficSeries(pp, tr)...)
	g := tb.group(fmt.Sprintf("overload: %s/%s sheds %s%% of its requests at max_in_flight", pp.Target, pp.Probe, plan.FmtF(sh*100)), ss,
		tb.burnTest(pp, rules.AlertFastBurn, pages, tr, forD), tb.inFlightCapTest(pp, tr))
	perSecond := requestsPerStep / tb.step.Seconds()
	g.ExprTests = tb.accountingTests(pp, end, tb.p.Scale(plan.StandardWindows[0]),
		truth{perSecond, perSecond * (1 - sh), perSecond * (1 - sh), 1 - sh})
	return g, true
}

// capWindowFor is the window and for: of pp's VLLMProbeInFlightCapReached.
func (tb *testBuilder) capWindowFor(pp plan.Pair) (time.Duration, time.Duration) {
	return pp.CountWindow, tb.p.InFlightCapFor(pp.CountWindow)
}

// inFlightCapTest expects the in-flight cap alert for pp at the end of tr
// when the shed share was above the threshold for the whole for:.
func (tb *testBuilder) inFlightCapTest(pp plan.Pair, tr traffic) AlertTest {
	end := tr.steps()
	w, forD := tb.capWindowFor(pp)
	test := AlertTest{EvalTime: tb.at(end), Alertname: rules.AlertInFlightCap, ExpAlerts: []ExpAlert{}}
	for s := end - tb.steps(forD); s <= end; s++ {
		if s < 1 || !(share(tr.window(s, tb.steps(w)), outShed) > plan.InFlightCapRatio) {
			return test
		}
	}
	labels := map[string]string{"target": pp.Target, "probe": pp.Probe}
	r, _ := tb.find(rules.AlertInFlightCap, labels)
	test.ExpAlerts = append(test.ExpAlerts, expected(r, labels, humanizePercentage(share(tr.window(end, tb.steps(w)), outShed))))
	return test
}

// slowBurn: the first pair with a ticket alert, healthy long enough to
// fill its long window, then fails a steady share of its requests, a burn
// between its ticket and page thresholds, until the ticket fires.
func (tb *testBuilder) slowBurn() (Group, bool) {
	pp, tickets, ok := tb.firstWith(plan.SeverityTicket)
	if !ok {
		return Group{}, false
	}
	budget := 1 - pp.Objective
	maxTicket, minPage := 0.0, 1/budget
	for _, b := range tickets {
		maxTicket = max(maxTicket, b.Factor)
	}
	pages := burnsOf(pp, plan.SeverityPage)
	for _, b := range pages {
		minPage = min(minPage, b.Factor)
	}
	burn := (maxTicket + minPage) / 2
	forD := tb.p.Scale(tb.p.Options.TicketFor)
	tr := tb.burnTraffic(pp, tickets, outHTTP5xx, burn*budget, forD)
	ss := append(tb.base(tr.steps(), &pp), tb.trafficSeries(pp, tr)...)
	return tb.group(fmt.Sprintf("slow burn: %s/%s burns its budget %sx, below every page", pp.Target, pp.Probe, plan.FmtF(burn)), ss,
		tb.burnTest(pp, rules.AlertSlowBurn, tickets, tr, forD),
		tb.burnTest(pp, rules.AlertFastBurn, pages, tr, tb.p.ForTime(tb.p.Options.PageFor))), true
}

// abandoned: half of the first pair's requests are cancelled at shutdown
// (the prober abandons them) for longer than any page needs; they leave
// the denominator, so nothing burns.
func (tb *testBuilder) abandoned() Group {
	pp := tb.p.Pairs[0]
	if p, _, ok := tb.firstWith(plan.SeverityPage); ok {
		pp = p
	}
	pages, tickets := burnsOf(pp, plan.SeverityPage), burnsOf(pp, plan.SeverityTicket)
	h := max(tb.steps(tb.p.Scale(plan.StandardWindows[0])), tb.longSteps(pages))
	_, capFor := tb.capWindowFor(pp)
	tr := traffic{mixed(h+tb.steps(max(tb.p.ForTime(tb.p.Options.PageFor), capFor)), outShutdown, 0.5)}
	end := tr.steps()
	ss := append(tb.base(end, &pp), tb.trafficSeries(pp, tr)...)
	g := tb.group(fmt.Sprintf("abandoned: %s/%s cancels half its requests at shutdown, nothing burns", pp.Target, pp.Probe), ss,
		tb.burnTest(pp, rules.AlertFastBurn, pages, tr, tb.p.ForTime(tb.p.Options.PageFor), outShutdown),
		tb.burnTest(pp, rules.AlertSlowBurn, tickets, tr, tb.p.Scale(tb.p.Options.TicketFor), outShutdown),
		AlertTest{EvalTime: tb.at(end), Alertname: rules.AlertInFlightCap, ExpAlerts: []ExpAlert{}})
	perSecond := requestsPerStep / tb.step.Seconds()
	g.ExprTests = tb.accountingTests(pp, end, tb.p.Scale(plan.StandardWindows[0]), truth{perSecond, perSecond / 2, perSecond / 2, 1})
	return g
}

// oneShed: the first pair sheds a single request; the in-flight cap
// alert stays quiet while it is in the window and after.
func (tb *testBuilder) oneShed() Group {
	pp := tb.p.Pairs[0]
	w, forD := tb.capWindowFor(pp)
	h := tb.steps(w) + 1
	n := float64(requestsPerStep)
	tr := traffic{healthyTraffic(h)[0], {1, map[string]float64{outAccepted: n - 1, outShed: 1}}, healthyTraffic(tb.steps(forD) + 1)[0]}
	ss := append(tb.base(tr.steps(), &pp), tb.trafficSeries(pp, tr)...)
	quiet := func(at int) AlertTest {
		return AlertTest{EvalTime: tb.at(at), Alertname: rules.AlertInFlightCap, ExpAlerts: []ExpAlert{}}
	}
	return tb.group(fmt.Sprintf("one shed request: %s/%s, no in-flight cap alert", pp.Target, pp.Probe), ss,
		quiet(h+1), quiet(h+1+tb.steps(w)), quiet(tr.steps()))
}

// workedExample is the goodput methodology's worked example on the first
// pair, in per-second rates over the shortest recorded window: 120/s
// offered, of which 4/s complete late, 1/s fail quality, 0.5/s get an
// HTTP 500 and 0.5/s never finish (time out); then 130/s offered, of which
// 17/s complete late and 3/s are shed at max_in_flight.
func (tb *testBuilder) workedExample() Group {
	pp := tb.p.Pairs[0]
	w := tb.p.Scale(plan.StandardWindows[0])
	ws, sec := tb.steps(w), tb.step.Seconds()
	level := func(perSecond map[string]float64) phase {
		ends := map[string]float64{}
		for k, v := range perSecond {
			ends[k] = v * sec
		}
		return phase{ws, ends}
	}
	tr := traffic{
		level(map[string]float64{outAccepted: 114, outLatency: 4, outQuality: 1, outHTTP5xx: 0.5, outTimeout: 0.5}),
		level(map[string]float64{outAccepted: 110, outLatency: 17, outShed: 3}),
	}
	ss := append(tb.base(tr.steps(), &pp), tb.trafficSeries(pp, tr)...)
	g := tb.group(fmt.Sprintf("worked example: %s/%s at 120/s, then 130/s with shedding", pp.Target, pp.Probe), ss)
	g.ExprTests = append(tb.accountingTests(pp, ws, w, truth{120, 119.5, 114, 0.95}),
		tb.accountingTests(pp, 2*ws, w, truth{130, 127, 110, 110.0 / 130})...)
	return g
}

func (tb *testBuilder) firstLatency() (plan.Pair, plan.Latency, bool) {
	for _, pp := range tb.p.Pairs {
		if len(pp.Latency) > 0 && pp.Hist.Classic {
			return pp, pp.Latency[0], true
		}
	}
	return plan.Pair{}, plan.Latency{}, false
}

// histogram is the histogram metric of the series labels (seriesLabels)
// with buckets at half, one and two times thr seconds: every observation
// is in the first bucket, or (over) in the one just above thr.
func (tb *testBuilder) histogram(metric, labels string, thr float64, over bool, steps int) []InputSeries {
	var ss []InputSeries
	for _, le := range []float64{thr / 2, thr, 2 * thr, math.Inf(1)} {
		inc := float64(requestsPerStep)
		if over && le <= thr {
			inc = 0
		}
		les := "+Inf"
		if !math.IsInf(le, 1) {
			les = plan.FmtF(le)
		}
		ss = append(ss, tb.series(metric+"_bucket", fmt.Sprintf("%s,le=%q", labels, les), counter(segment{inc, steps})))
	}
	return ss
}

// latencySeries is the histogram of l's SLO for pp (histogram).
func (tb *testBuilder) latencySeries(pp plan.Pair, l plan.Latency, slow bool, steps int) []InputSeries {
	return tb.histogram(plan.SLOMetric[l.SLO], seriesLabels(pp, ""), l.Threshold.Seconds(), slow, steps)
}

// latency: every latency SLO of the first pair with p99 alerts is
// exceeded by every request; each of its alerts fires.
func (tb *testBuilder) latency() (Group, bool) {
	pp, _, ok := tb.firstLatency()
	if !ok {
		return Group{}, false
	}
	steps := 0
	for _, l := range pp.Latency {
		steps = max(steps, tb.steps(l.Window+tb.p.Scale(tb.p.Options.LatencyFor))+2)
	}
	ss := tb.base(steps, nil)
	test := AlertTest{EvalTime: tb.at(steps), Alertname: rules.AlertLatencyHigh}
	var slos []string
	for _, l := range pp.Latency {
		ss = append(ss, tb.latencySeries(pp, l, true, steps)...)
		// histogram_quantile interpolates rank 0.99 inside the (slo, 2*slo] bucket.
		slo := l.Threshold.Seconds()
		v := slo + (2*slo-slo)*0.99
		labels := map[string]string{"target": pp.Target, "probe": pp.Probe, "slo": l.SLO}
		r, _ := tb.find(rules.AlertLatencyHigh, labels)
		test.ExpAlerts = append(test.ExpAlerts, expected(r, labels, humanizeDuration(v)))
		slos = append(slos, l.SLO)
	}
	return tb.group(fmt.Sprintf("latency: %s/%s p99 %s above its SLO", pp.Target, pp.Probe, strings.Join(slos, ", ")), ss, test), true
}

// ttftBuckets are the bucket bounds of the TTFT test histograms.
var ttftBuckets = []string{"0.1", "0.2", "1", "2", "+Inf"}

// ttftSeries are the client TTFT histogram of pp and vLLM's own for its
// target (with model_name and engine labels, as the prober re-exports it),
// every observation in the bucket whose upper bound is client or server.
func (tb *testBuilder) ttftSeries(pp plan.Pair, client, server string, steps int) []InputSeries {
	return append(tb.ttftHistogram(metricname.TTFT+"_bucket", seriesLabels(pp, ""), client, steps),
		tb.ttftHistogram("vllm:time_to_first_token_seconds_bucket", fmt.Sprintf(",target=%q,model_name=\"m\",engine=\"0\"", pp.Target), server, steps)...)
}

// ttftHistogram is the TTFT histogram name of the series labels with
// every observation in the bucket whose upper bound is in.
func (tb *testBuilder) ttftHistogram(name, labels, in string, steps int) []InputSeries {
	var ss []InputSeries
	inc := 0.0
	for _, le := range ttftBuckets {
		if le == in {
			inc = requestsPerStep
		}
		ss = append(ss, tb.series(name, fmt.Sprintf("%s,le=%q", labels, le), counter(segment{inc, steps})))
	}
	return ss
}

// ttftGap: the clients of the first pair with TTFT buckets see a p50 TTFT
// of 1.5s while vLLM's own histogram for the target has a p50 of 0.15s.
func (tb *testBuilder) ttftGap() (Group, bool) {
	pp, ok := tb.firstFed(config.HistogramTTFT, "")
	if !ok {
		return Group{}, false
	}
	return tb.ttftGapGroup("client TTFT far above the server's: target "+pp.Target, pp, nil), true
}

// ttftGapGroup is the scenario name in which pp's own series (a gateway's
// or static target's) see a p50 TTFT of 1.5s, vLLM's own histogram for
// the target 0.15s and pp's replicas fast, probed directly, 0.15s too;
// the alert fires for the target.
func (tb *testBuilder) ttftGapGroup(name string, pp plan.Pair, fast []string) Group {
	lw := tb.p.Scale(tb.p.Options.LatencyWindow)
	steps := tb.steps(lw+tb.p.Scale(tb.p.Options.LatencyFor)) + 2
	ss := append(tb.base(steps, nil), tb.ttftSeries(pp, "2", "0.2", steps)...)
	for _, r := range fast {
		ss = append(ss, tb.ttftHistogram(metricname.TTFT+"_bucket", seriesLabels(pp, r), "0.2", steps)...)
	}
	// histogram_quantile interpolates rank 0.5 inside (1, 2] and (0.1, 0.2].
	client, server := 1+(2-1)*0.5, 0.1+(0.2-0.1)*0.5
	labels := map[string]string{"target": pp.Target}
	r, _ := tb.find(rules.AlertClientTTFTAboveServer, nil)
	test := AlertTest{EvalTime: tb.at(steps), Alertname: rules.AlertClientTTFTAboveServer, ExpAlerts: []ExpAlert{expected(r, labels, humanizeDuration(client-server))}}
	return tb.group(name, ss, test)
}

func (tb *testBuilder) scrapeFailing() Group {
	steps := tb.steps(tb.p.Scale(tb.p.Options.HealthFor)) + 2
	target := tb.p.Pairs[0].Target
	ss := append(tb.base(steps, nil), tb.scrapeSeries(target, 0, steps))
	labels := map[string]string{"target": target}
	r, _ := tb.find(rules.AlertScrapeFailing, nil)
	test := AlertTest{EvalTime: tb.at(steps), Alertname: rules.AlertScrapeFailing, ExpAlerts: []ExpAlert{expected(r, labels, "")}}
	return tb.group("scrape failing: target "+target, ss, test)
}

func (tb *testBuilder) absent() Group {
	steps := tb.steps(tb.p.Scale(tb.p.Options.HealthFor)) + 2
	ss := []InputSeries{{Series: `up{job="some-other-job",instance="x:1"}`, Values: fmt.Sprintf("1+0x%d", steps)}}
	labels := map[string]string{"job": tb.p.Options.Job}
	r, _ := tb.find(rules.AlertProberAbsent, nil)
	test := AlertTest{EvalTime: tb.at(steps), Alertname: rules.AlertProberAbsent, ExpAlerts: []ExpAlert{expected(r, labels, "")}}
	return tb.group("prober absent", ss, test)
}
