package promtest

import (
	"fmt"
	"time"

	"github.com/vllm-prober/vllm-prober/collector/metricname"
	"github.com/vllm-prober/vllm-prober/config"
	"github.com/vllm-prober/vllm-prober/rules"
	"github.com/vllm-prober/vllm-prober/rules/internal/plan"
	"github.com/vllm-prober/vllm-prober/rules/internal/rulefile"
)

// requestsPerStep is the counter increment per test step.
const requestsPerStep = 6

// Generate builds promtool unit tests for the rules rules.Generate makes
// from cfg with the same options: every alert is shown quiet on a healthy service
// and firing in a scenario of its own, the recording rules are checked
// against the methodology's worked example, and overload (requests shed at
// max_in_flight) burns the budget while requests the prober abandons do
// not. Scenarios whose alert was dropped for low traffic are left out, and
// so are those that would need a histogram no pair exports with classic
// buckets (fed).
func Generate(cfg *config.Config, o rules.Options) (*File, error) {
	rf, _, err := rules.Generate(cfg, o)
	if err != nil {
		return nil, err
	}
	p := rulefile.Plan(rf)
	tb := &testBuilder{p: p, rules: rf, step: testStep(p)}
	tf := &File{RuleFiles: []string{p.Options.RuleFileName}, EvaluationInterval: plan.FmtDur(tb.step)}
	tf.Tests = append(tf.Tests, tb.healthy(), tb.absent(), tb.proberDown(), tb.reloadFailed(), tb.ledgerErrors())
	if len(p.Pairs) == 0 {
		return tf, nil
	}
	tf.Tests = append(tf.Tests, tb.workedExample(), tb.abandoned(), tb.oneShed(), tb.notCompleting(),
		tb.targetDown())
	optional := func(gs ...func() (Group, bool)) {
		for _, g := range gs {
			if grp, ok := g(); ok {
				tf.Tests = append(tf.Tests, grp)
			}
		}
	}
	optional(tb.scheduleLag, tb.ttftGap)
	tf.Tests = append(tf.Tests, tb.scrapeFailing())
	optional(tb.fastBurn, tb.overload, tb.slowBurn, tb.latency, tb.outputChanged, tb.healthyFleet)
	tf.Tests = append(tf.Tests, tb.fleetScenarios()...)
	tf.Tests = append(tf.Tests, tb.discoveryScenarios()...)
	return tf, nil
}

type testBuilder struct {
	p     *plan.Plan
	rules *rules.RuleFile
	step  time.Duration // sample and evaluation interval
}

// testStep is the largest interval that divides every window the rules
// read, so the expected values are exact while promtool evaluates as few
// steps as possible. for: durations need not be multiples of it.
func testStep(p *plan.Plan) time.Duration {
	g := time.Duration(0)
	add := func(d time.Duration) {
		for d != 0 {
			g, d = d, g%d
		}
	}
	for _, w := range p.Windows {
		add(w)
	}
	for _, pp := range p.Pairs {
		add(pp.CountWindow)
		for _, l := range pp.Latency {
			add(l.Window)
		}
	}
	add(p.Scale(5 * time.Minute))
	add(p.Scale(30 * time.Minute))
	add(p.Scale(p.Options.LatencyWindow))
	for _, tp := range p.Targets {
		if tp.Discovery {
			add(tp.DiscoveryWindow)
		}
	}
	return max(g, p.Gran)
}

// steps converts a duration to test steps, rounding up.
func (tb *testBuilder) steps(d time.Duration) int {
	return int((d + tb.step - 1) / tb.step)
}

func (tb *testBuilder) at(steps int) string { return plan.FmtDur(time.Duration(steps) * tb.step) }

func (tb *testBuilder) group(name string, series []InputSeries, tests ...AlertTest) Group {
	return Group{Name: name, Interval: plan.FmtDur(tb.step), InputSeries: series, AlertRuleTests: tests}
}

// segment is a run of steps in which a counter grows by inc per step.
type segment struct {
	inc   float64
	steps int
}

// counter renders segments in expanding notation, starting at 0.
func counter(segs ...segment) string {
	out, v := "", 0.0
	for i, s := range segs {
		if i == 0 {
			out = fmt.Sprintf("0+%gx%d", s.inc, s.steps)
		} else if s.steps > 0 {
			out += fmt.Sprintf(" %g+%gx%d", v+s.inc, s.inc, s.steps-1)
		}
		v += s.inc * float64(s.steps)
	}
	return out
}

func (tb *testBuilder) series(name, labels, values string) InputSeries {
	return InputSeries{Series: fmt.Sprintf("%s{job=%q,instance=\"prober:9478\"%s}", name, tb.p.Options.Job, labels), Values: values}
}

// prober is the prober's own series: up, the reload gauge and the ledger
// error counter, all healthy unless a scenario says otherwise.
type prober struct {
	up, reloadOK int
	ledgerErrors float64 // per step
}

var healthyProber = prober{up: 1, reloadOK: 1}

func (tb *testBuilder) proberSeries(pr prober, steps int) []InputSeries {
	inst := fmt.Sprintf("{job=%q,instance=\"prober:9478\"}", tb.p.Options.Job)
	return []InputSeries{
		{Series: "up" + inst, Values: fmt.Sprintf("%d+0x%d", pr.up, steps)},
		{Series: metricname.ConfigLastReloadSuccessful + inst, Values: fmt.Sprintf("%d+0x%d", pr.reloadOK, steps)},
		{Series: metricname.LedgerWriteErrors + inst, Values: counter(segment{pr.ledgerErrors, steps})},
	}
}

// base is every pair but except healthy and the prober up.
func (tb *testBuilder) base(steps int, except *plan.Pair) []InputSeries {
	var ss []InputSeries
	for _, pp := range tb.p.Pairs {
		if except != nil && pp.Target == except.Target && pp.Probe == except.Probe {
			continue
		}
		ss = append(ss, tb.trafficSeries(pp, healthyTraffic(steps))...)
	}
	return append(ss, tb.proberSeries(healthyProber, steps)...)
}

func (tb *testBuilder) scrapeSeries(target string, v, steps int) InputSeries {
	return tb.series(metricname.ServerScrapeSuccess, fmt.Sprintf(",target=%q", target), fmt.Sprintf("%d+0x%d", v, steps))
}

// targets lists the configured targets with pairs, in config order.
func (tb *testBuilder) targets() []string {
	var out []string
	seen := map[string]bool{}
	for _, pp := range tb.p.Pairs {
		if !seen[pp.Target] {
			seen[pp.Target] = true
			out = append(out, pp.Target)
		}
	}
	return out
}

// allAlerts are the names of every alert the rules generate.
var allAlerts = []string{
	rules.AlertFastBurn, rules.AlertSlowBurn, rules.AlertLatencyHigh, rules.AlertNotCompleting, rules.AlertTargetDown, rules.AlertScrapeFailing,
	rules.AlertScheduleLag, rules.AlertClientTTFTAboveServer, rules.AlertInFlightCap, rules.AlertProberAbsent, rules.AlertProberDown,
	rules.AlertReloadFailed, rules.AlertLedgerErrors, rules.AlertOutputChanged, rules.AlertReplicaFailing, rules.AlertGatewayFailing,
	rules.AlertNoReplicas, rules.AlertDiscoveryFailing,
}

// healthy: every pair accepts every request, the prober and the server
// scrapes are up, client and server TTFT agree, the schedule lag is low;
// no alert fires.
func (tb *testBuilder) healthy() Group {
	steps := tb.steps(tb.p.Scale(6*time.Hour + 30*time.Minute))
	for _, pp := range tb.p.Pairs {
		steps = max(steps, tb.fillSteps(burnsOf(pp, plan.SeverityPage)))
	}
	ss := append(tb.base(steps, nil), tb.fingerprintSeries(steps)...)
	ss = append(ss, tb.healthyDiscovery(steps)...)
	for _, t := range tb.targets() {
		ss = append(ss, tb.scrapeSeries(t, 1, steps))
		if pp, ok := tb.firstFed(config.HistogramTTFT, t); ok {
			ss = append(ss, tb.ttftSeries(pp, "0.2", "0.2", steps)...)
		}
	}
	for _, pp := range tb.p.Pairs {
		if fed(pp, config.HistogramScheduleLag) {
			ss = append(ss, tb.lagSeries(seriesLabels(pp, ""), false, steps)...)
		}
	}
	if pp, l, ok := tb.firstLatency(); ok {
		ss = append(ss, tb.latencySeries(pp, l, false, steps)...)
	}
	at := tb.at(steps)
	var tests []AlertTest
	for _, a := range allAlerts {
		tests = append(tests, AlertTest{EvalTime: at, Alertname: a, ExpAlerts: []ExpAlert{}})
	}
	g := tb.group("healthy: no alert fires", ss, tests...)
	if len(tb.p.Pairs) > 0 {
		pp := tb.p.Pairs[0]
		w := tb.p.Scale(plan.StandardWindows[0])
		perSecond := requestsPerStep / tb.step.Seconds()
		g.ExprTests = tb.accountingTests(pp, steps, w, truth{perSecond, perSecond, perSecond, 1})
	}
	return g
}
