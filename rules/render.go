package rules

import (
	"fmt"
	"strings"
	"time"
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
	RecordClientTTFT = "target:vllm_probe_time_to_first_token_seconds:p50_rate"
	RecordServerTTFT = "target:vllm_time_to_first_token_seconds:p50_rate"
)

// valueFmt renders an alert's value with one decimal; tests expand it.
const valueFmt = `{{ $value | printf "%.1f" }}`

// durationFmt renders an alert's value as a duration; tests expand it.
const durationFmt = `{{ $value | humanizeDuration }}`

func (p *plan) sel(extra string) string {
	s := fmt.Sprintf("job=%q", p.o.Job)
	if extra != "" {
		s += "," + extra
	}
	return "{" + s + "}"
}

func pairSel(pp pairPlan) string {
	return fmt.Sprintf("{target=%q,probe=%q}", pp.Target, pp.Probe)
}

func (p *plan) recordingRules() []Rule {
	var rs []Rule
	byPair := func(metric, extra, w string) string {
		return fmt.Sprintf("sum by (target, probe) (rate(%s%s[%s]))", metric, p.sel(extra), w)
	}
	completed := `disposition!="cancelled"`
	accepted := `disposition="accepted"`
	for _, wd := range p.windows {
		w := fmtDur(wd)
		rs = append(rs,
			Rule{Record: RecordOffered + w, Expr: byPair("vllm_probe_requests_offered_total", "", w)},
			Rule{Record: RecordCompleted + w, Expr: byPair("vllm_probe_requests_total", completed, w)},
			Rule{Record: RecordGoodput + w, Expr: byPair("vllm_probe_requests_total", accepted, w)},
			Rule{Record: RecordAcceptance + w, Expr: byPair("vllm_probe_requests_total", accepted, w) +
				"\n/\n" + byPair("vllm_probe_requests_total", completed, w)},
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
		{Record: RecordClientTTFT + w, Expr: fmt.Sprintf("histogram_quantile(0.5, sum by (target, le) (rate(vllm_probe_time_to_first_token_seconds_bucket%s[%s])))", p.sel(""), w)},
		{Record: RecordServerTTFT + w, Expr: fmt.Sprintf("histogram_quantile(0.5, sum by (target, le) (rate(vllm:time_to_first_token_seconds_bucket%s[%s])))", p.sel(`target!=""`), w)},
	}
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
		Expr:  fmt.Sprintf("%s > %s\nand\n%s > %s", burnExpr(pp, b.Long), f, burnExpr(pp, b.Short), f),
		For:   fmtDur(p.scale(forD)),
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

func burnAnnotations(pp pairPlan, b burnPlan, value string) map[string]string {
	obj := fmtF(pp.Objective * 100)
	return map[string]string{
		"summary": fmt.Sprintf("%s/%s burns its %s%% acceptance error budget %sx too fast", pp.Target, pp.Probe, obj, value),
		"description": fmt.Sprintf("Probe %s against target %s has an acceptance objective of %s%% (error budget %s%% of completed requests). "+
			"Over the last %s the budget burned %sx faster than sustainable, and still above %sx over the last %s (threshold %sx). "+
			"At this rate a 30-day budget lasts %s.",
			pp.Probe, pp.Target, obj, fmtF((1-pp.Objective)*100), fmtDur(b.Long), value, fmtF(b.Factor), fmtDur(b.Short),
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
	"ttft": "vllm_probe_time_to_first_token_seconds",
	"tpot": "vllm_probe_time_per_output_token_seconds",
	"e2el": "vllm_probe_e2e_request_latency_seconds",
}

func (p *plan) latencyAlerts() []Rule {
	var rs []Rule
	for _, pp := range p.pairs {
		for _, l := range pp.Latency {
			extra := fmt.Sprintf("target=%q,probe=%q", pp.Target, pp.Probe)
			r := Rule{
				Alert: AlertLatencyHigh,
				Expr: fmt.Sprintf("histogram_quantile(0.99, sum by (target, probe, le) (rate(%s_bucket%s[%s])))\n> %s",
					sloMetric[l.SLO], p.sel(extra), fmtDur(l.Window), fmtF(l.Threshold.Seconds())),
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
