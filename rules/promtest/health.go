package promtest

import (
	"fmt"
	"time"

	"github.com/vllm-prober/vllm-prober/collector/metricname"
	"github.com/vllm-prober/vllm-prober/config"
	"github.com/vllm-prober/vllm-prober/rules"
)

// healthSteps is long enough for a health alert over window w to fire.
func (tb *testBuilder) healthSteps(w time.Duration) int {
	return tb.steps(w) + tb.steps(tb.p.Scale(tb.p.Options.HealthFor)) + 2
}

// proberAlert expects alert with the prober's job and instance labels.
func (tb *testBuilder) proberAlert(alert string, at int) AlertTest {
	labels := map[string]string{"job": tb.p.Options.Job, "instance": "prober:9478"}
	r, _ := tb.find(alert, nil)
	return AlertTest{EvalTime: tb.at(at), Alertname: alert, ExpAlerts: []ExpAlert{expected(r, labels, "")}}
}

// proberOnly is the prober's own series without any pair.
func (tb *testBuilder) proberScenario(name, alert string, pr prober, w time.Duration) Group {
	steps := tb.healthSteps(w)
	var ss []InputSeries
	for _, pp := range tb.p.Pairs {
		ss = append(ss, tb.trafficSeries(pp, healthyTraffic(steps))...)
	}
	ss = append(ss, tb.proberSeries(pr, steps)...)
	return tb.group(name, ss, tb.proberAlert(alert, steps))
}

func (tb *testBuilder) proberDown() Group {
	return tb.proberScenario("prober down: up is 0", rules.AlertProberDown, prober{up: 0, reloadOK: 1}, 0)
}

func (tb *testBuilder) reloadFailed() Group {
	return tb.proberScenario("config reload failed", rules.AlertReloadFailed, prober{up: 1, reloadOK: 0}, 0)
}

func (tb *testBuilder) ledgerErrors() Group {
	return tb.proberScenario("ledger write errors", rules.AlertLedgerErrors, prober{up: 1, reloadOK: 1, ledgerErrors: 1}, tb.p.Scale(30*time.Minute))
}

// notCompleting: the first pair offers requests that never end.
func (tb *testBuilder) notCompleting() Group {
	pp := tb.p.Pairs[0]
	steps := tb.healthSteps(pp.CountWindow)
	tr := traffic{{steps, map[string]float64{outInFlight: requestsPerStep}}}
	ss := append(tb.base(steps, &pp), tb.trafficSeries(pp, tr)...)
	labels := map[string]string{"target": pp.Target, "probe": pp.Probe}
	r, _ := tb.find(rules.AlertNotCompleting, labels)
	test := AlertTest{EvalTime: tb.at(steps), Alertname: rules.AlertNotCompleting, ExpAlerts: []ExpAlert{expected(r, labels, "")}}
	return tb.group(fmt.Sprintf("not completing: %s/%s offers requests that never end", pp.Target, pp.Probe), ss, test)
}

// targetDown: every request of every pair of the first target fails to
// connect.
func (tb *testBuilder) targetDown() Group {
	target := tb.p.Targets[0]
	steps := tb.steps(target.Window) + tb.steps(tb.p.ForTime(tb.p.Options.PageFor)) + 2
	var ss []InputSeries
	for _, pp := range tb.p.Pairs {
		tr := healthyTraffic(steps)
		if pp.Target == target.Name {
			tr = traffic{mixed(steps, outConnect, 1)}
		}
		ss = append(ss, tb.trafficSeries(pp, tr)...)
	}
	ss = append(ss, tb.proberSeries(healthyProber, steps)...)
	labels := map[string]string{"target": target.Name}
	r, _ := tb.find(rules.AlertTargetDown, labels)
	test := AlertTest{EvalTime: tb.at(steps), Alertname: rules.AlertTargetDown, ExpAlerts: []ExpAlert{expected(r, labels, humanizePercentage(1))}}
	return tb.group("target down: every request to "+target.Name+" fails to connect", ss, test)
}

// lagSeries is the schedule lag histogram of the series labels
// (seriesLabels) around the schedule lag threshold: every send within
// half of it, or (late) just above it.
func (tb *testBuilder) lagSeries(labels string, late bool, steps int) []InputSeries {
	return tb.histogram(metricname.ScheduleLag, labels, tb.p.Options.ScheduleLag.Seconds(), late, steps)
}

// scheduleLag: the first pair with schedule lag buckets sends all its
// requests late.
func (tb *testBuilder) scheduleLag() (Group, bool) {
	pp, ok := tb.firstFed(config.HistogramScheduleLag, "")
	if !ok {
		return Group{}, false
	}
	steps := tb.healthSteps(tb.p.Scale(tb.p.Options.LatencyWindow))
	ss := append(tb.base(steps, nil), tb.lagSeries(seriesLabels(pp, ""), true, steps)...)
	thr := tb.p.Options.ScheduleLag.Seconds()
	// histogram_quantile interpolates rank 0.99 inside (thr, 2*thr].
	labels := map[string]string{"target": pp.Target, "probe": pp.Probe}
	r, _ := tb.find(rules.AlertScheduleLag, nil)
	test := AlertTest{EvalTime: tb.at(steps), Alertname: rules.AlertScheduleLag, ExpAlerts: []ExpAlert{expected(r, labels, humanizeDuration(thr+thr*0.99))}}
	return tb.group(fmt.Sprintf("schedule lag: %s/%s sends every request late", pp.Target, pp.Probe), ss, test), true
}
