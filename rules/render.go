package rules

import (
	"fmt"
	"strings"
	"time"

	"github.com/vllm-prober/vllm-prober/collector/metricname"
)

// Alert names of the SLO alerts.
const (
	AlertFastBurn    = "VLLMProbeErrorBudgetFastBurn"
	AlertSlowBurn    = "VLLMProbeErrorBudgetSlowBurn"
	AlertLatencyHigh = "VLLMProbeLatencyHigh"
)

// Recorded series name prefixes; the window is appended (rate5m, ratio_rate1h).
const (
	RecordOffered    = "target_probe:vllm_probe_requests_offered:rate"
	RecordCompleted  = "target_probe:vllm_probe_requests_completed:rate"
	RecordGoodput    = "target_probe:vllm_probe_requests_accepted:rate"
	RecordAcceptance = "target_probe:vllm_probe_acceptance:ratio_rate"
	RecordObjective  = "target_probe:vllm_probe_objective:ratio"
	RecordClientTTFT = "target:" + metricname.TTFT + ":p50_rate"
	RecordServerTTFT = "target:vllm_time_to_first_token_seconds:p50_rate"
)

// valueFmt renders an alert's value with one decimal; tests expand it.
const valueFmt = `{{ $value | printf "%.1f" }}`

// durationFmt renders an alert's value as a duration; tests expand it.
const durationFmt = `{{ $value | humanizeDuration }}`

func (p *plan) jobMatcher() string { return fmt.Sprintf("job=%q", p.o.Job) }

func (p *plan) sel(extra string) string { return selector(p.jobMatcher(), extra) }

func pairSel(pp pairPlan) string {
	return fmt.Sprintf("{target=%q,probe=%q}", pp.Target, pp.Probe)
}

func (p *plan) recordingRules() []Rule {
	var rs []Rule
	for _, wd := range p.windows {
		w := fmtDur(wd)
		rs = append(rs,
			Rule{Record: RecordOffered + w, Expr: p.targetExpr(OfferedExpr, w)},
			Rule{Record: RecordCompleted + w, Expr: p.targetExpr(CompletedExpr, w)},
			Rule{Record: RecordGoodput + w, Expr: p.targetExpr(GoodputExpr, w)},
			Rule{Record: RecordAcceptance + w, Expr: p.targetExpr(AcceptanceExpr, w)},
		)
	}
	for _, pp := range p.pairs {
		rs = append(rs, Rule{Record: RecordObjective, Expr: "vector(" + fmtF(pp.Objective) + ")",
			Labels: map[string]string{"target": pp.Target, "probe": pp.Probe}})
	}
	return rs
}

// ttftRecordingRules are the client and server p50 TTFT per target that the
// client/server divergence alert compares.
func (p *plan) ttftRecordingRules() []Rule {
	w := fmtDur(p.scale(p.o.LatencyWindow))
	return []Rule{
		{Record: RecordClientTTFT + w, Expr: quantileExpr("0.5", metricname.TTFT, p.sel(""), "target", w, p.formsOf(metricname.TTFT))},
		{Record: RecordServerTTFT + w, Expr: fmt.Sprintf("histogram_quantile(0.5, sum by (target, le) (rate(%s_bucket%s[%s])))", metricname.VLLMTimeToFirstToken, p.sel(`target!=""`), w)},
	}
}

// forTime is the scaled for: of d; 0 stays 0 (no for:).
func (p *plan) forTime(d time.Duration) time.Duration {
	if d == 0 {
		return 0
	}
	return p.scale(d)
}

// forDur is the scaled for: of d as a rule writes it; "" (none) for 0.
func (p *plan) forDur(d time.Duration) string {
	if d == 0 {
		return ""
	}
	return fmtDur(p.scale(d))
}

func (p *plan) runbook(alert string) string {
	return p.o.RunbookURL + "#" + strings.ToLower(alert)
}

// burnExpr is the burn rate of a pair over window w, for $value.
func burnExpr(pp pairPlan, w time.Duration) string {
	return fmt.Sprintf("(1 - %s%s%s) / %s", RecordAcceptance, fmtDur(w), pairSel(pp), fmtF(1-pp.Objective))
}

func (p *plan) burnAlerts() []Rule {
	var rs []Rule
	for _, pp := range p.pairs {
		for _, b := range pp.Burns {
			rs = append(rs, p.burnAlert(pp, b))
		}
	}
	return rs
}

func (p *plan) burnAlert(pp pairPlan, b burnPlan) Rule {
	name, forD := AlertFastBurn, p.o.PageFor
	if b.Severity == SeverityTicket {
		name, forD = AlertSlowBurn, p.o.TicketFor
	}
	f := fmtF(b.Factor)
	r := Rule{
		Alert: name,
		Expr: fmt.Sprintf("%s > %s\nand\n%s > %s\nand\n%s >= %s * %s", burnExpr(pp, b.Long), f, burnExpr(pp, b.Short), f,
			heldExpr(pp, b.Long), fmtF(heldRatio), heldExpr(pp, b.Short)),
		For: p.forDur(forD),
		Labels: map[string]string{
			"severity": b.Severity, "target": pp.Target, "probe": pp.Probe,
			"long_window": fmtDur(b.Long), "short_window": fmtDur(b.Short),
		},
		Annotations: burnAnnotations(pp, b, valueFmt),
	}
	r.Annotations["runbook_url"] = p.runbook(name)
	if b.Note != "" {
		r.Annotations["low_traffic"] = b.Note
	}
	return r
}

// heldRatio: a burn pair fires only when its long window holds at least
// this many times the requests of its short window. Full windows hold
// long/short times as many (at least 2); after the prober starts, both
// hold only what it has sent so far, and one early failure in a few
// requests would burn both above the threshold and page. The windows were
// chosen (planBurn) for the requests full windows hold.
const heldRatio = 1.5

// heldExpr is how many requests the pair offered over window w.
func heldExpr(pp pairPlan, w time.Duration) string {
	return fmt.Sprintf("%s%s%s * %s", RecordOffered, fmtDur(w), pairSel(pp), fmtF(w.Seconds()))
}

// burnAnnotations: $value is the first operand of the alert's `and`, the
// burn rate over the long window, and the text says so; the short window
// is only said to be above the threshold, which the expr guarantees.
func burnAnnotations(pp pairPlan, b burnPlan, value string) map[string]string {
	obj := fmtF(pp.Objective * 100)
	return map[string]string{
		"summary": fmt.Sprintf("%s/%s burns its %s%% acceptance error budget %sx too fast over %s", pp.Target, pp.Probe, obj, value, fmtDur(b.Long)),
		"description": fmt.Sprintf("Probe %s against target %s has an acceptance objective of %s%% (error budget: %s%% of offered requests not accepted; "+
			"requests shed at max_in_flight count, those abandoned at shutdown or reload do not). "+
			"Over the last %s the budget burned %sx faster than sustainable, and over the last %s too more than %sx. "+
			"At a %sx burn a 30-day budget lasts %s.",
			pp.Probe, pp.Target, obj, fmtF((1-pp.Objective)*100), fmtDur(b.Long), value, fmtDur(b.Short), fmtF(b.Factor),
			fmtF(b.Factor), budgetLasts(b.Factor)),
	}
}

// budgetLasts says how long a 30-day budget lasts at the threshold burn.
func budgetLasts(factor float64) string {
	h := 30 * 24 / factor
	if d := h / 24; d == float64(int(d)) {
		return fmtF(d) + " days"
	}
	return fmtF(h) + " hours"
}

var sloMetric = map[string]string{
	"ttft": metricname.TTFT,
	"ttfa": metricname.TTFA,
	"tpot": metricname.TPOT,
	"e2el": metricname.E2EL,
}

func (p *plan) latencyAlerts() []Rule {
	var rs []Rule
	for _, pp := range p.pairs {
		for _, l := range pp.Latency {
			extra := pairMatchers(pp)
			forms := histogramForms{classic: pp.Hist.Classic, native: !pp.Hist.Classic}
			r := Rule{
				Alert: AlertLatencyHigh,
				Expr: quantileExpr("0.99", sloMetric[l.SLO], p.sel(extra), "target, probe", fmtDur(l.Window), forms) +
					"\n> " + fmtF(l.Threshold.Seconds()),
				For:         fmtDur(p.scale(p.o.LatencyFor)),
				Labels:      map[string]string{"severity": SeverityTicket, "slo": l.SLO, "target": pp.Target, "probe": pp.Probe},
				Annotations: latencyAnnotations(pp, l, durationFmt),
			}
			r.Annotations["runbook_url"] = p.runbook(AlertLatencyHigh)
			if l.Note != "" {
				r.Annotations["low_traffic"] = l.Note
			}
			rs = append(rs, r)
		}
	}
	return rs
}

func latencyAnnotations(pp pairPlan, l latencyPlan, value string) map[string]string {
	up := strings.ToUpper(l.SLO)
	return map[string]string{
		"summary": fmt.Sprintf("%s/%s p99 %s is %s, above its %s SLO", pp.Target, pp.Probe, up, value, fmtDur(l.Threshold)),
		"description": fmt.Sprintf("The client-side p99 %s of probe %s against target %s over the last %s is %s; the SLO is %s. "+
			"Requests above it end as latency_failure and burn the acceptance budget.",
			up, pp.Probe, pp.Target, fmtDur(l.Window), value, fmtDur(l.Threshold)),
	}
}
