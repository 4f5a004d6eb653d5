package promtest

import (
	"fmt"
	"maps"

	"github.com/vllm-prober/vllm-prober/collector/metricname"
	"github.com/vllm-prober/vllm-prober/config"
	"github.com/vllm-prober/vllm-prober/rules"
	"github.com/vllm-prober/vllm-prober/rules/internal/plan"
)

// testReplicas are the replicas of the fleet scenarios: four, so one
// failing is a minority and three passing a majority.
var testReplicas = []string{"10.0.0.1:8000", "10.0.0.2:8000", "10.0.0.3:8000", "10.0.0.4:8000"}

// fleetScale multiplies the requests per step of the fleet scenarios, so
// that even a one-step short window holds fleetMinRequests.
const fleetScale = 5

// times is tr with k times the requests per step.
func (tr traffic) times(k float64) traffic {
	out := make(traffic, len(tr))
	for i, ph := range tr {
		ends := maps.Clone(ph.ends)
		for o := range ends {
			ends[o] *= k
		}
		out[i] = phase{ph.steps, ends}
	}
	return out
}

// firstFleet returns the first pair of a target with discovery and its
// page burn pairs.
func (tb *testBuilder) firstFleet() (plan.Pair, []plan.Burn, bool) {
	for _, pp := range tb.p.Pairs {
		if pages := burnsOf(pp, plan.SeverityPage); pp.Replicas && len(pages) > 0 {
			return pp, pages, true
		}
	}
	return plan.Pair{}, nil, false
}

// fleetSeries are every other pair healthy, pp's gateway (when it has
// one) with traffic gateway and its replicas with the traffic of each.
func (tb *testBuilder) fleetSeries(pp plan.Pair, gateway traffic, replicas []traffic) []InputSeries {
	ss := tb.base(gateway.steps(), &pp)
	if pp.Gateway {
		ss = append(ss, tb.trafficSeries(pp, gateway)...)
	}
	for i, tr := range replicas {
		ss = append(ss, tb.replicaTraffic(pp, testReplicas[i], tr)...)
	}
	return ss
}

func (tb *testBuilder) quiet(alert string, at int) AlertTest {
	return AlertTest{EvalTime: tb.at(at), Alertname: alert, ExpAlerts: []ExpAlert{}}
}

// fleetScenarios are the fleet alerts' scenarios on the first pair of a
// target with discovery: one replica failing (VLLMProbeReplicaFailing
// names it), the gateway failing in front of passing replicas
// (VLLMProbeGatewayFailing), and the neighbouring cases where neither may
// fire: every replica and the gateway failing, a single failed request,
// a healthy fleet.
func (tb *testBuilder) fleetScenarios() []Group {
	pp, pages, ok := tb.firstFleet()
	if !ok {
		return nil
	}
	forD := tb.p.ForTime(tb.p.Options.PageFor)
	fail := tb.burnTraffic(pp, pages, outHTTP5xx, 1, forD).times(fleetScale)
	end := fail.steps()
	ok200 := healthyTraffic(end).times(fleetScale)
	name := func(what string) string { return fmt.Sprintf("fleet: %s/%s %s", pp.Target, pp.Probe, what) }
	oneFails := tb.group(name("replica "+testReplicas[0]+" fails every request, the others pass"),
		tb.fleetSeries(pp, ok200, []traffic{fail, ok200, ok200, ok200}),
		tb.seriesBurnTest(pp, rules.AlertReplicaFailing, map[string]string{"replica": testReplicas[0]}, pages, fail, forD),
		tb.quiet(rules.AlertGatewayFailing, end))
	if pp.Gateway {
		// The users' path, the gateway, passes: the target's burn reads
		// only its series and stays quiet (one page, not two).
		oneFails.AlertRuleTests = append(oneFails.AlertRuleTests, tb.quiet(rules.AlertFastBurn, end))
	}
	gs := []Group{
		oneFails,
		tb.group(name("every replica and the gateway fail"),
			tb.fleetSeries(pp, fail, []traffic{fail, fail, fail, fail}),
			tb.quiet(rules.AlertReplicaFailing, end), tb.quiet(rules.AlertGatewayFailing, end),
			tb.burnTest(pp, rules.AlertFastBurn, pages, fail, forD)),
		tb.group(name("half the replicas fail: not a minority"),
			tb.fleetSeries(pp, ok200, []traffic{fail, fail, ok200, ok200}),
			tb.quiet(rules.AlertReplicaFailing, end), tb.quiet(rules.AlertGatewayFailing, end)),
		tb.flakyReplica(pp, pages),
	}
	if pp.Gateway {
		gs = append(gs, tb.group(name("gateway fails every request, every replica passes"),
			tb.fleetSeries(pp, fail, []traffic{ok200, ok200, ok200, ok200}),
			tb.seriesBurnTest(pp, rules.AlertGatewayFailing, nil, pages, fail, forD),
			tb.burnTest(pp, rules.AlertFastBurn, pages, fail, forD),
			tb.quiet(rules.AlertReplicaFailing, end)))
		gs = append(gs, tb.gatewayOnly(pp)...)
	}
	return gs
}

// gatewayOnly are the scenarios of the TTFT and schedule lag alerts of
// pp's target, which has a gateway: they read the gateway's series only,
// as the other target-level rules do. Its clients wait at the gateway
// while its replicas, probed directly, are fast (the TTFT alert fires for
// the target), and its replicas are sent late while the gateway is on
// time (the schedule lag alert stays quiet).
func (tb *testBuilder) gatewayOnly(pp plan.Pair) []Group {
	var gs []Group
	if fed(pp, config.HistogramTTFT) {
		gs = append(gs, tb.ttftGapGroup(fmt.Sprintf("fleet: %s/%s clients wait at the gateway, not at the replicas", pp.Target, pp.Probe), pp, testReplicas))
	}
	if fed(pp, config.HistogramScheduleLag) {
		steps := tb.healthSteps(tb.p.Scale(tb.p.Options.LatencyWindow))
		ss := append(tb.base(steps, nil), tb.lagSeries(seriesLabels(pp, ""), false, steps)...)
		for _, r := range testReplicas {
			ss = append(ss, tb.lagSeries(seriesLabels(pp, r), true, steps)...)
		}
		gs = append(gs, tb.group(fmt.Sprintf("fleet: %s/%s replicas sent late, the gateway on time", pp.Target, pp.Probe), ss,
			tb.quiet(rules.AlertScheduleLag, steps)))
	}
	return gs
}

// flakyReplica: the fleet is healthy but for one failed request of one
// replica; neither fleet alert fires while it is in any window, nor on
// the healthy fleet before it.
func (tb *testBuilder) flakyReplica(pp plan.Pair, pages []plan.Burn) Group {
	h := tb.longSteps(pages)
	n := float64(requestsPerStep * fleetScale)
	ok200 := healthyTraffic(h).times(fleetScale)
	flaky := traffic{ok200[0], {1, map[string]float64{outAccepted: n - 1, outHTTP5xx: 1}}, ok200[0]}
	tail := healthyTraffic(flaky.steps()).times(fleetScale)
	g := tb.group(fmt.Sprintf("fleet: %s/%s healthy but for one failed request of %s", pp.Target, pp.Probe, testReplicas[1]),
		tb.fleetSeries(pp, tail, []traffic{tail, flaky, tail, tail}))
	for _, at := range []int{h, h + 1, h + 2, flaky.steps()} {
		g.AlertRuleTests = append(g.AlertRuleTests, tb.quiet(rules.AlertReplicaFailing, at), tb.quiet(rules.AlertGatewayFailing, at))
	}
	return g
}

// outputChanged: the first probe with a fingerprint counts one confirmed
// change of its output; the ticket fires and names the pair.
func (tb *testBuilder) outputChanged() (Group, bool) {
	for _, pp := range tb.p.Pairs {
		if !pp.Fingerprint {
			continue
		}
		steps := tb.healthSteps(0)
		ss := append(tb.base(steps, nil),
			tb.series(metricname.OutputFingerprintChanges, seriesLabels(pp, ""),
				counter(segment{0, 1}, segment{1, 1}, segment{0, steps - 1})))
		labels := map[string]string{"target": pp.Target, "probe": pp.Probe}
		r, _ := tb.find(rules.AlertOutputChanged, labels)
		test := AlertTest{EvalTime: tb.at(steps), Alertname: rules.AlertOutputChanged, ExpAlerts: []ExpAlert{expected(r, labels, "")}}
		return tb.group(fmt.Sprintf("output changed: %s/%s answers its fixed prompt differently", pp.Target, pp.Probe), ss,
			tb.quiet(rules.AlertOutputChanged, 1), test), true
	}
	return Group{}, false
}

// fingerprintSeries are the fingerprint change counters of every probe
// with a fingerprint, at 0: the healthy scenario shows the ticket quiet.
func (tb *testBuilder) fingerprintSeries(steps int) []InputSeries {
	var ss []InputSeries
	for _, pp := range tb.p.Pairs {
		if pp.Fingerprint {
			ss = append(ss, tb.series(metricname.OutputFingerprintChanges, seriesLabels(pp, ""), counter(segment{0, steps})))
		}
	}
	return ss
}

// healthyFleet: every pair of every target with discovery has a healthy
// gateway (when it has a url) and four healthy replicas.
func (tb *testBuilder) healthyFleet() (Group, bool) {
	pp, pages, ok := tb.firstFleet()
	if !ok {
		return Group{}, false
	}
	steps := tb.fillSteps(pages)
	ok200 := healthyTraffic(steps).times(fleetScale)
	g := tb.group(fmt.Sprintf("fleet: %s/%s gateway and replicas healthy", pp.Target, pp.Probe),
		tb.fleetSeries(pp, ok200, []traffic{ok200, ok200, ok200, ok200}),
		tb.quiet(rules.AlertReplicaFailing, steps), tb.quiet(rules.AlertGatewayFailing, steps), tb.quiet(rules.AlertFastBurn, steps))
	return g, true
}

// discoveryTargets are the targets with discovery, in config order.
func (tb *testBuilder) discoveryTargets() []plan.Target {
	var out []plan.Target
	for _, tp := range tb.p.Targets {
		if tp.Discovery {
			out = append(out, tp)
		}
	}
	return out
}

// replicasSeries is the discovery gauge of target; values in expanding
// notation.
func (tb *testBuilder) replicasSeries(target, values string) InputSeries {
	return tb.series(metricname.DiscoveryReplicas, fmt.Sprintf(",target=%q", target), values)
}

// failuresSeries is the failed refresh counter of tp's discovery.
func (tb *testBuilder) failuresSeries(tp plan.Target, values string) InputSeries {
	return tb.series(metricname.DiscoveryFailures, fmt.Sprintf(",target=%q,mechanism=%q", tp.Name, tp.Mechanism), values)
}

// healthyDiscovery: every discovery target probes four replicas and no
// refresh fails.
func (tb *testBuilder) healthyDiscovery(steps int) []InputSeries {
	var ss []InputSeries
	for _, tp := range tb.discoveryTargets() {
		ss = append(ss, tb.replicasSeries(tp.Name, fmt.Sprintf("%d+0x%d", len(testReplicas), steps)), tb.failuresSeries(tp, counter(segment{0, steps})))
	}
	return ss
}

// discoveryScenarios are VLLMProbeNoReplicas's and
// VLLMProberDiscoveryFailing's: every discovery target's set empties
// (each fires at its severity, not before its for:; a static target's
// name with the gauge at 0 does not, as the rules read only discovery
// targets), every discovery target down to one replica (quiet), every
// refresh of the first discovery target failing (fires) and one failed
// refresh of each (quiet throughout).
func (tb *testBuilder) discoveryScenarios() []Group {
	dts := tb.discoveryTargets()
	if len(dts) == 0 {
		return nil
	}
	forD := tb.p.ForTime(tb.p.Options.HealthFor)
	steps := tb.healthSteps(0)
	isDiscovery := map[string]bool{}
	for _, tp := range dts {
		isDiscovery[tp.Name] = true
	}
	// The pairs' series stay healthy: the rules read the gauge alone.
	empty, one := tb.base(steps, nil), tb.base(steps, nil)
	fires := AlertTest{EvalTime: tb.at(steps), Alertname: rules.AlertNoReplicas}
	for _, t := range tb.targets() {
		empty = append(empty, tb.replicasSeries(t, fmt.Sprintf("%d 0+0x%d", len(testReplicas), steps-1)))
		if !isDiscovery[t] {
			continue
		}
		one = append(one, tb.replicasSeries(t, fmt.Sprintf("1+0x%d", steps)))
		labels := map[string]string{"target": t}
		r, _ := tb.find(rules.AlertNoReplicas, labels)
		fires.ExpAlerts = append(fires.ExpAlerts, expected(r, labels, ""))
	}
	noReplicas := tb.group("no replicas: every target's discovery gauge drops to 0, static targets' names too", empty, fires)
	if forD > 0 {
		// Pending, not firing, until the set has been empty for its for:.
		noReplicas.AlertRuleTests = append(noReplicas.AlertRuleTests, tb.quiet(rules.AlertNoReplicas, tb.steps(forD)))
	}

	tp := dts[0]
	fsteps := tb.healthSteps(tp.DiscoveryWindow)
	perStep := tb.step.Seconds() / tp.Refresh.Seconds()
	var failing, transient []InputSeries
	h := tb.steps(tp.DiscoveryWindow)
	for _, d := range dts {
		failing = append(failing, tb.replicasSeries(d.Name, fmt.Sprintf("%d+0x%d", len(testReplicas), fsteps)))
		transient = append(transient, tb.replicasSeries(d.Name, fmt.Sprintf("%d+0x%d", len(testReplicas), fsteps)),
			tb.failuresSeries(d, counter(segment{0, h}, segment{1, 1}, segment{0, fsteps - h - 1})))
		if d.Name == tp.Name {
			failing = append(failing, tb.failuresSeries(d, counter(segment{perStep, fsteps})))
		} else {
			failing = append(failing, tb.failuresSeries(d, counter(segment{0, fsteps})))
		}
	}
	labels := map[string]string{"target": tp.Name, "mechanism": tp.Mechanism}
	r, _ := tb.find(rules.AlertDiscoveryFailing, labels)
	failingGroup := tb.group(fmt.Sprintf("discovery failing: every %s refresh of target %s fails", tp.Mechanism, tp.Name),
		append(tb.base(fsteps, nil), failing...),
		AlertTest{EvalTime: tb.at(fsteps), Alertname: rules.AlertDiscoveryFailing, ExpAlerts: []ExpAlert{expected(r, labels, "")}},
		tb.quiet(rules.AlertNoReplicas, fsteps))
	transientGroup := tb.group("discovery failing: one failed refresh of every discovery target",
		append(tb.base(fsteps, nil), transient...))
	for _, at := range []int{h, h + 1, h + 2, fsteps} {
		transientGroup.AlertRuleTests = append(transientGroup.AlertRuleTests, tb.quiet(rules.AlertDiscoveryFailing, at))
	}
	return []Group{
		noReplicas,
		tb.group("no replicas: every discovery target down to one replica", one, tb.quiet(rules.AlertNoReplicas, steps)),
		failingGroup, transientGroup,
	}
}
