package rules

import (
	"fmt"
	"strings"
	"time"

	"github.com/vllm-prober/vllm-prober/collector/metricname"
	"github.com/vllm-prober/vllm-prober/rules/internal/plan"
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

func (p builder) jobMatcher() string { return fmt.Sprintf("job=%q", p.Options.Job) }

func (p builder) sel(extra string) string { return selector(p.jobMatcher(), extra) }

func (p builder) recordingRules() []Rule {
	var rs []Rule
	for _, wd := range p.Windows {
		w := plan.FmtDur(wd)
		rs = append(rs,
			Rule{Record: RecordOffered + w, Expr: p.targetExpr(OfferedExpr, w)},
			Rule{Record: RecordCompleted + w, Expr: p.targetExpr(CompletedExpr, w)},
			Rule{Record: RecordGoodput + w, Expr: p.targetExpr(GoodputExpr, w)},
			Rule{Record: RecordAcceptance + w, Expr: p.targetExpr(AcceptanceExpr, w)},
		)
	}
	for _, pp := range p.Pairs {
		rs = append(rs, Rule{Record: RecordObjective, Expr: "vector(" + plan.FmtF(pp.Objective) + ")",
			Labels: map[string]string{"target": pp.Target, "probe": pp.Probe}})
	}
	return rs
}

// ttftRecordingRules are the client and server p50 TTFT per target that the
// client/server divergence alert compares. The client side of a target
// with a gateway is its gateway's series (targetQuantile); the server
// side is every server the prober scrapes for the target.
func (p builder) ttftRecordingRules() []Rule {
	w := plan.FmtDur(p.Scale(p.Options.LatencyWindow))
	return []Rule{
		{Record: RecordClientTTFT + w, Expr: p.targetQuantile("0.5", metricname.TTFT, "target", w, p.formsOf(metricname.TTFT))},
		{Record: RecordServerTTFT + w, Expr: fmt.Sprintf("histogram_quantile(0.5, sum by (target, le) (rate(%s_bucket%s[%s])))", metricname.VLLMTimeToFirstToken, p.sel(`target!=""`), w)},
	}
}

// forDur is the scaled for: of d as a rule writes it; "" (none) for 0.
func (p builder) forDur(d time.Duration) string {
	if d == 0 {
		return ""
	}
	return plan.FmtDur(p.Scale(d))
}

func (p builder) runbook(alert string) string {
	return p.Options.RunbookURL + "#" + strings.ToLower(alert)
}

// burnExpr is the burn rate of a pair over window w, for $value.
func burnExpr(pp plan.Pair, w time.Duration) string {
	return fmt.Sprintf("(1 - %s%s%s) / %s", RecordAcceptance, plan.FmtDur(w), pp.Selector(), plan.FmtF(1-pp.Objective))
}

func (p builder) burnAlerts() []Rule {
	var rs []Rule
	for _, pp := range p.Pairs {
		for _, b := range pp.Burns {
			rs = append(rs, p.burnAlert(pp, b))
		}
	}
	return rs
}

func (p builder) burnAlert(pp plan.Pair, b plan.Burn) Rule {
	name, forD := AlertFastBurn, p.Options.PageFor
	if b.Severity == SeverityTicket {
		name, forD = AlertSlowBurn, p.Options.TicketFor
	}
	f := plan.FmtF(b.Factor)
	r := Rule{
		Alert: name,
		Expr: fmt.Sprintf("%s > %s\nand\n%s > %s\nand\n%s >= %s * %s", burnExpr(pp, b.Long), f, burnExpr(pp, b.Short), f,
			heldExpr(pp, b.Long), plan.FmtF(plan.HeldRatio), heldExpr(pp, b.Short)),
		For: p.forDur(forD),
		Labels: map[string]string{
			"severity": b.Severity, "target": pp.Target, "probe": pp.Probe,
			"long_window": plan.FmtDur(b.Long), "short_window": plan.FmtDur(b.Short),
		},
		Annotations: burnAnnotations(pp, b, valueFmt),
	}
	r.Annotations["runbook_url"] = p.runbook(name)
	if b.Note != "" {
		r.Annotations["low_traffic"] = b.Note
	}
	return r
}

// heldExpr is how many requests the pair offered over window w.
func heldExpr(pp plan.Pair, w time.Duration) string {
	return fmt.Sprintf("%s%s%s * %s", RecordOffered, plan.FmtDur(w), pp.Selector(), plan.FmtF(w.Seconds()))
}

// burnAnnotations: $value is the first operand of the alert's `and`, the
// burn rate over the long window, and the text says so; the short window
// is only said to be above the threshold, which the expr guarantees.
func burnAnnotations(pp plan.Pair, b plan.Burn, value string) map[string]string {
	obj := plan.FmtF(pp.Objective * 100)
	return map[string]string{
		"summary": fmt.Sprintf("%s/%s burns its %s%% acceptance error budget %sx too fast over %s", pp.Target, pp.Probe, obj, value, plan.FmtDur(b.Long)),
		"description": fmt.Sprintf("Probe %s against target %s has an acceptance objective of %s%% (error budget: %s%% of offered requests not accepted; "+
			"requests shed at max_in_flight count, those abandoned at shutdown or reload do not). "+
			"Over the last %s the budget burned %sx faster than sustainable, and over the last %s too more than %sx. "+
			"At a %sx burn a 30-day budget lasts %s.",
			pp.Probe, pp.Target, obj, plan.FmtF((1-pp.Objective)*100), plan.FmtDur(b.Long), value, plan.FmtDur(b.Short), plan.FmtF(b.Factor),
			plan.FmtF(b.Factor), budgetLasts(b.Factor)),
	}
}

// budgetLasts says how long a 30-day budget lasts at the threshold burn.
func budgetLasts(factor float64) string {
	h := 30 * 24 / factor
	if d := h / 24; d == float64(int(d)) {
		return plan.FmtF(d) + " days"
	}
	return plan.FmtF(h) + " hours"
}

func (p builder) latencyAlerts() []Rule {
	var rs []Rule
	for _, pp := range p.Pairs {
		for _, l := range pp.Latency {
			extra := pairMatchers(pp)
			forms := histogramForms{classic: pp.Hist.Classic, native: !pp.Hist.Classic}
			r := Rule{
				Alert: AlertLatencyHigh,
				Expr: quantileOperand("0.99", plan.SLOMetric[l.SLO], p.sel(extra), "target, probe", plan.FmtDur(l.Window), forms) +
					"\n> " + plan.FmtF(l.Threshold.Seconds()),
				For:         plan.FmtDur(p.Scale(p.Options.LatencyFor)),
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

func latencyAnnotations(pp plan.Pair, l plan.Latency, value string) map[string]string {
	up := strings.ToUpper(l.SLO)
	return map[string]string{
		"summary": fmt.Sprintf("%s/%s p99 %s is %s, above its %s SLO", pp.Target, pp.Probe, up, value, plan.FmtDur(l.Threshold)),
		"description": fmt.Sprintf("The client-side p99 %s of probe %s against target %s over the last %s is %s; the SLO is %s. "+
			"Requests above it end as latency_failure and burn the acceptance budget.",
			up, pp.Probe, pp.Target, plan.FmtDur(l.Window), value, plan.FmtDur(l.Threshold)),
	}
}
