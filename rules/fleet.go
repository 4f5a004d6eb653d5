package rules

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/vllm-prober/vllm-prober/collector/metricname"
	"github.com/vllm-prober/vllm-prober/discovery"
	"github.com/vllm-prober/vllm-prober/rules/internal/plan"
)

// A target with `discovery:` probes each replica as its own pair, whose
// series carry the replica's host:port in the label `replica`; with a
// `url` too, the gateway's series (no replica label) sit in front of
// them (docs/design.md, Fleets). The fleet alerts tell which of them
// burns the error budget: one replica while most pass
// (VLLMProbeReplicaFailing), or the gateway while every replica passes
// (VLLMProbeGatewayFailing). docs/alerts.md, "Fleets", says which alert
// fires for which fault.

// Alert names of the fleet alerts: the burn of one replica or of the
// gateway, and the discovery of a target that probes no replica or whose
// refreshes fail.
const (
	AlertReplicaFailing   = "VLLMProbeReplicaFailing"
	AlertGatewayFailing   = "VLLMProbeGatewayFailing"
	AlertNoReplicas       = "VLLMProbeNoReplicas"
	AlertDiscoveryFailing = "VLLMProberDiscoveryFailing"
)

// Recorded series name prefixes of the fleet alerts, per (target, probe,
// replica); the window is appended. A gateway's series have no replica
// label and stay a series of their own.
const (
	RecordReplicaOffered    = "target_probe_replica:vllm_probe_requests_offered:rate"
	RecordReplicaAcceptance = "target_probe_replica:vllm_probe_acceptance:ratio_rate"
)

// fleetMinRequests is how many requests the short window of a replica
// (or gateway) must hold before a fleet alert judges it. The windows are
// planned for the probe's rate, which each replica gets; with rate_split
// a replica gets a share of it, and a window of a few requests would page
// on one failure. The windows are not re-planned for the share: this
// guard alone decides, so a fleet small enough to fill the short window
// pages as fast as a single server (docs/alerts.md, "Replica windows and
// rate_split").
const fleetMinRequests = plan.MinCountWindow

// Selectors of a pair's replica series and of its gateway series.
const (
	replicaSeries = `replica!=""`
	gatewaySeries = `replica=""`
)

// pairMatchers select the series of pp that its target-level alerts
// read: a target with a url and discovery is judged by its gateway's
// series, the path users take (its replicas have the fleet alerts); a
// target with discovery only by all its replicas together.
func pairMatchers(pp plan.Pair) string {
	m := fmt.Sprintf("target=%q,probe=%q", pp.Target, pp.Probe)
	if pp.Gateway {
		m += "," + gatewaySeries
	}
	return m
}

// targetExpr is expr (OfferedExpr, AcceptanceExpr, ...) per (target,
// probe) over window w, for the series pairMatchers selects: when a
// target has a gateway, the other targets' sums or its gateway's. The
// two sides hold different targets, so `or` joins them. Without
// gateways it is expr over every series of the job.
func (p builder) targetExpr(expr func(matchers, window string) string, w string) string {
	job := p.jobMatcher()
	if len(p.Gateways) == 0 {
		return expr(job, w)
	}
	quoted := make([]string, len(p.Gateways))
	for i, g := range p.Gateways {
		quoted[i] = regexp.QuoteMeta(g)
	}
	gws := strings.Join(quoted, "|")
	return fmt.Sprintf("(\n%s\n)\nor\n(\n%s\n)",
		expr(fmt.Sprintf("%s,target!~%q", job, gws), w),
		expr(fmt.Sprintf("%s,target=~%q,%s", job, gws, gatewaySeries), w))
}

// targetQuantile is the q-quantile of metric (quantileExpr) over the
// series targetExpr selects: a target with a gateway by its gateway's
// series only. Without gateways it is quantileOperand; with them it joins
// two sides, each in one pair of parentheses, and is parenthesised as a
// whole, so a comparison after it applies to both.
func (p builder) targetQuantile(q, metric, by, w string, f histogramForms) string {
	if len(p.Gateways) == 0 {
		return quantileOperand(q, metric, selector(p.jobMatcher()), by, w, f)
	}
	return "(\n" + p.targetExpr(func(matchers, window string) string {
		return quantileExpr(q, metric, selector(matchers), by, window, f)
	}, w) + "\n)"
}

// fleetWindows are the windows the fleet alerts read: the page windows of
// every pair of a target with discovery.
func (p builder) fleetWindows() []time.Duration {
	set := map[time.Duration]bool{}
	for _, pp := range p.Pairs {
		for _, b := range pp.Burns {
			if pp.Replicas && b.Severity == SeverityPage {
				set[b.Long], set[b.Short] = true, true
			}
		}
	}
	var ws []time.Duration
	for w := range set {
		ws = append(ws, w)
	}
	sort.Slice(ws, func(i, j int) bool { return ws[i] < ws[j] })
	return ws
}

// fleetRecordingRules record offered requests and acceptance per
// (target, probe, replica) over the fleet windows.
func (p builder) fleetRecordingRules() []Rule {
	var rs []Rule
	job := p.jobMatcher()
	for _, wd := range p.fleetWindows() {
		w := plan.FmtDur(wd)
		rs = append(rs,
			Rule{Record: RecordReplicaOffered + w, Expr: rateBy(byReplica, metricname.RequestsOffered, job, "", w)},
			Rule{Record: RecordReplicaAcceptance + w, Expr: ReplicaAcceptanceExpr(job, w)},
		)
	}
	return rs
}

// fleetSel selects pp's series of one kind (replicaSeries or gatewaySeries).
func fleetSel(pp plan.Pair, kind string) string {
	return fmt.Sprintf("{target=%q,probe=%q,%s}", pp.Target, pp.Probe, kind)
}

// seriesBurn is the burn rate of each series of sel over window w.
func seriesBurn(pp plan.Pair, sel string, w time.Duration) string {
	return fmt.Sprintf("(1 - %s%s%s) / %s", RecordReplicaAcceptance, plan.FmtDur(w), sel, plan.FmtF(1-pp.Objective))
}

// seriesOffered is how many requests each series of sel offered over w.
func seriesOffered(sel string, w time.Duration) string {
	return fmt.Sprintf("%s%s%s * %s", RecordReplicaOffered, plan.FmtDur(w), sel, plan.FmtF(w.Seconds()))
}

// seriesBurning: each series of sel burns above b's factor over both of
// its windows, the long window holds plan.HeldRatio times the requests of the
// short one (as the pair's burn alerts require) and the short one at
// least fleetMinRequests.
func seriesBurning(pp plan.Pair, b plan.Burn, sel string) string {
	f := plan.FmtF(b.Factor)
	return fmt.Sprintf("%s > %s\nand\n%s > %s\nand\n%s >= %s * %s\nand\n%s >= %d",
		seriesBurn(pp, sel, b.Long), f, seriesBurn(pp, sel, b.Short), f,
		seriesOffered(sel, b.Long), plan.FmtF(plan.HeldRatio), seriesOffered(sel, b.Short),
		seriesOffered(sel, b.Short), fleetMinRequests)
}

// passingReplicas counts pp's replicas whose burn over b's long window is
// below b's factor; replicasExpr counts them all.
func passingReplicas(pp plan.Pair, b plan.Burn) string {
	return fmt.Sprintf("count by (target, probe) (%s < %s)", seriesBurn(pp, fleetSel(pp, replicaSeries), b.Long), plan.FmtF(b.Factor))
}

func replicasExpr(pp plan.Pair, b plan.Burn) string {
	return fmt.Sprintf("count by (target, probe) (%s%s%s)", RecordReplicaOffered, plan.FmtDur(b.Long), fleetSel(pp, replicaSeries))
}

// fleetAlerts are, per pair of a target with discovery and page burn
// pair, VLLMProbeReplicaFailing and, when the target has a url,
// VLLMProbeGatewayFailing.
func (p builder) fleetAlerts() []Rule {
	var rs []Rule
	for _, pp := range p.Pairs {
		if !pp.Replicas {
			continue
		}
		for _, b := range pp.Burns {
			if b.Severity != SeverityPage {
				continue
			}
			rs = append(rs, p.replicaFailing(pp, b))
			if pp.Gateway {
				rs = append(rs, p.gatewayFailing(pp, b))
			}
		}
	}
	return rs
}

// fleetRule is a page of pp over b's windows; $value is the burn over the
// long window, the first operand of expr.
func (p builder) fleetRule(alert string, pp plan.Pair, b plan.Burn, expr, summary, description string) Rule {
	r := Rule{
		Alert: alert,
		Expr:  expr,
		For:   p.forDur(p.Options.PageFor),
		Labels: map[string]string{
			"severity": SeverityPage, "target": pp.Target, "probe": pp.Probe,
			"long_window": plan.FmtDur(b.Long), "short_window": plan.FmtDur(b.Short),
		},
		Annotations: map[string]string{"summary": summary, "description": description, "runbook_url": p.runbook(alert)},
	}
	if b.Note != "" {
		r.Annotations["low_traffic"] = b.Note
	}
	return r
}

// fleetText is what a fleet alert says: whose series burn (who, in
// the summary; whom, in the description), what the other series do
// (while) and what that means (cause).
type fleetText struct{ who, whom, while, cause string }

// fleetAlert pages when the series of kind burn over b's windows and
// the count of passing replicas compares with the count of all replicas
// (times share) as cmp says.
func (p builder) fleetAlert(alert string, pp plan.Pair, b plan.Burn, kind, cmp, share string, txt fleetText) Rule {
	expr := fmt.Sprintf("%s\nand on (target, probe)\n(\n%s\n%s\n%s%s\n)",
		seriesBurning(pp, b, fleetSel(pp, kind)), passingReplicas(pp, b), cmp, replicasExpr(pp, b), share)
	obj, f, long := plan.FmtF(pp.Objective*100), plan.FmtF(b.Factor), plan.FmtDur(b.Long)
	return p.fleetRule(alert, pp, b, expr,
		fmt.Sprintf("%s of %s/%s burns its %s%% acceptance error budget %sx too fast over %s while %s", txt.who, pp.Target, pp.Probe, obj, valueFmt, long, txt.while),
		fmt.Sprintf("Probe %s against %s of target %s burned its %s%% acceptance objective's error budget %sx faster than sustainable over the last %s, and more than %sx over the last %s, "+
			"while %s (below %sx over %s). %s", pp.Probe, txt.whom, pp.Target, obj, valueFmt, long, f, plan.FmtDur(b.Short), txt.while, f, long, txt.cause))
}

// replicaFailing: a replica burns the budget while more than half of the
// pair's replicas are below the factor; when half or more fail, the fault
// is the model's or the fleet's, not one engine's, and the pair's own
// burn alerts judge it.
func (p builder) replicaFailing(pp plan.Pair, b plan.Burn) Rule {
	return p.fleetAlert(AlertReplicaFailing, pp, b, replicaSeries, ">", " / 2", fleetText{
		who: "Replica {{ $labels.replica }}", whom: "replica {{ $labels.replica }}", while: "most replicas pass",
		cause: "One engine is sick (crashed, out of memory, bad node or GPU): drain or restart it; the others serve."})
}

// gatewayFailing: the gateway's series burn the budget while every
// replica behind it is below the factor. A static target has no replica
// series, so the count is empty and the alert cannot fire.
func (p builder) gatewayFailing(pp plan.Pair, b plan.Burn) Rule {
	return p.fleetAlert(AlertGatewayFailing, pp, b, gatewaySeries, "==", "", fleetText{
		who: "The gateway", whom: "the url (gateway)", while: "every replica passes",
		cause: "The engines serve: the router, ingress or load balancer in front of them fails."})
}

// discoveryAlerts watch the discovery of every target with `discovery:`
// (docs/alerts.md, VLLMProbeNoReplicas and VLLMProberDiscoveryFailing);
// a config without one gets neither.
func (p builder) discoveryAlerts() []Rule {
	var rs []Rule
	for _, tp := range p.Targets {
		if tp.Discovery {
			rs = append(rs, p.noReplicas(tp), p.discoveryFailing(tp))
		}
	}
	return rs
}

// noReplicas fires when the target's discovery probes no replica: an
// empty set, or no successful refresh since the prober started. Without
// a url nothing of the target is then probed: its pairs' series go, every
// burn window is empty and no other alert can fire, so it pages. With a
// url the gateway is still probed and judged; only the replicas are
// unwatched, a ticket. The gauge is 0 from a discovery's start until its
// first refresh, which the for: covers.
func (p builder) noReplicas(tp plan.Target) Rule {
	severity := SeverityPage
	consequence := "The target has no url, so nothing of it is probed: its series are gone, its burn, latency and target-down alerts read nothing and stay quiet however its users fare."
	if tp.Gateway {
		severity = SeverityTicket
		consequence = "Its url (the gateway) is still probed and its own alerts judge the users' path; its replicas are unwatched (" + AlertReplicaFailing + " and " + AlertGatewayFailing + " cannot fire)."
	}
	forD := p.Options.HealthFor
	r := p.healthRule(AlertNoReplicas, severity,
		fmt.Sprintf("max by (target) (%s%s) == 0", metricname.DiscoveryReplicas, p.sel(fmt.Sprintf("target=%q", tp.Name))), forD,
		fmt.Sprintf("Target %s probes no replica: its %s discovery finds none", tp.Name, tp.Mechanism),
		fmt.Sprintf("%s of target %s is 0%s: its %s discovery found no replica (%s), "+
			"or it has not refreshed successfully since it started (%s). %s",
			metricname.DiscoveryReplicas, tp.Name, p.forText(forD), tp.Mechanism, emptySet[tp.Mechanism], AlertDiscoveryFailing, consequence))
	r.Labels["target"] = tp.Name
	return r
}

// emptySet says, per mechanism, what an empty set of replicas usually is.
var emptySet = map[string]string{
	discovery.MechanismDNS:    "no record for its names: a headless Service without ready endpoints, every pod gone",
	discovery.MechanismFileSD: "no target in its files: an empty list, or no file matching its globs",
	discovery.MechanismHTTPSD: "an empty list from its endpoint",
}

// forText is ", for d" (scaled) as an annotation says it, "" for none.
func (p builder) forText(d time.Duration) string {
	if d == 0 {
		return ""
	}
	return ", for " + p.forDur(d)
}

// discoveryFailing fires when at least tp.DiscoveryFailures refreshes of
// the target's discovery failed over tp.DiscoveryWindow, half of those
// the interval makes (plan.Plan.planDiscovery): the prober exports no
// count of successful refreshes, so the failure rate stands for "most
// refreshes fail".
func (p builder) discoveryFailing(tp plan.Target) Rule {
	w := plan.FmtDur(tp.DiscoveryWindow)
	forD := p.Options.HealthFor
	r := p.healthRule(AlertDiscoveryFailing, SeverityTicket,
		fmt.Sprintf("max by (target, mechanism) (increase(%s%s[%s])) >= %d", metricname.DiscoveryFailures, p.sel(fmt.Sprintf("target=%q", tp.Name)), w, tp.DiscoveryFailures), forD,
		fmt.Sprintf("Replica discovery of target %s fails half or more of its refreshes", tp.Name),
		fmt.Sprintf("At least %d of the %s refreshes (one every %s) of the %s discovery of target %s over the last %s failed%s. "+
			"The prober counts failed refreshes, not successful ones, so this is a failure rate: one failed refresh never fires it. "+
			"The last good set of replicas is kept, so replicas started since are not probed and those gone fail their probes; the status page shows the last error.",
			tp.DiscoveryFailures, plan.FmtF(float64(tp.DiscoveryWindow)/float64(tp.Refresh)), plan.FmtDur(tp.Refresh), tp.Mechanism, tp.Name, w, p.forText(forD)))
	r.Labels["target"] = tp.Name
	return r
}
