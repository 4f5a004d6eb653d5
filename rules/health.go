package rules

import (
	"fmt"
	"time"

	"github.com/vllm-prober/vllm-prober/collector/metricname"
	"github.com/vllm-prober/vllm-prober/rules/internal/plan"
)

// Alert names of the prober-health alerts.
const (
	AlertProberAbsent          = "VLLMProberAbsent"
	AlertProberDown            = "VLLMProberDown"
	AlertNotCompleting         = "VLLMProbeNotCompleting"
	AlertTargetDown            = "VLLMProbeTargetDown"
	AlertScrapeFailing         = "VLLMServerScrapeFailing"
	AlertScheduleLag           = "VLLMProbeScheduleLagHigh"
	AlertClientTTFTAboveServer = "VLLMProbeClientTTFTAboveServer"
	AlertInFlightCap           = "VLLMProbeInFlightCapReached"
	AlertReloadFailed          = "VLLMProberConfigReloadFailed"
	AlertLedgerErrors          = "VLLMProberLedgerWriteErrors"
)

// percentFmt renders an alert's ratio value as a percentage.
const percentFmt = `{{ $value | humanizePercentage }}`

func (p builder) healthRule(alert, severity, expr string, forD time.Duration, summary, description string) Rule {
	return Rule{
		Alert:  alert,
		Expr:   expr,
		For:    p.forDur(forD),
		Labels: map[string]string{"severity": severity},
		Annotations: map[string]string{
			"summary": summary, "description": description, "runbook_url": p.runbook(alert),
		},
	}
}

// healthAlerts are the prober-health alerts: the prober, each pair, each
// target, each target's discovery.
func (p builder) healthAlerts() []Rule {
	rs := p.proberAlerts()
	rs = append(rs, p.notCompletingAlerts()...)
	rs = append(rs, p.inFlightCapAlerts()...)
	rs = append(rs, p.targetAlerts()...)
	return append(rs, p.discoveryAlerts()...)
}

// proberAlerts watch the prober process itself.
func (p builder) proberAlerts() []Rule {
	o := p.Options
	w30 := plan.FmtDur(p.Scale(30 * time.Minute))
	return []Rule{
		p.healthRule(AlertProberAbsent, SeverityTicket, fmt.Sprintf("absent(up{job=%q})", o.Job), o.HealthFor,
			fmt.Sprintf("No %s target is scraped by Prometheus", o.Job),
			fmt.Sprintf("Prometheus has no up series for job %q: the prober is not deployed or its scrape config is wrong. No SLO alert can fire while it is absent.", o.Job)),
		p.healthRule(AlertProberDown, SeverityTicket, fmt.Sprintf("up{job=%q} == 0", o.Job), o.HealthFor,
			"Prober {{ $labels.instance }} cannot be scraped",
			"Prometheus fails to scrape the prober at {{ $labels.instance }}; its probes' SLO alerts are blind until it is back."),
		p.healthRule(AlertReloadFailed, SeverityTicket,
			fmt.Sprintf(metricname.ConfigLastReloadSuccessful+"%s == 0", p.sel("")), o.HealthFor,
			"Prober {{ $labels.instance }} failed to reload its configuration",
			"The last configuration reload failed; the prober keeps running the previous configuration, which may not match the generated rules."),
		p.healthRule(AlertLedgerErrors, SeverityTicket,
			fmt.Sprintf("increase("+metricname.LedgerWriteErrors+"%s[%s]) > 0", p.sel(""), w30), o.HealthFor,
			"Prober {{ $labels.instance }} fails to write its ledger",
			"Ledger records are being lost (disk full or read-only?); metrics still count every request."),
	}
}

// notCompletingAlerts fire per pair when requests are offered but none end.
func (p builder) notCompletingAlerts() []Rule {
	var rs []Rule
	o := p.Options
	for _, pp := range p.Pairs {
		w := plan.FmtDur(pp.CountWindow)
		ps := pairMatchers(pp)
		r := p.healthRule(AlertNotCompleting, SeverityTicket,
			fmt.Sprintf("sum by (target, probe) (rate("+metricname.RequestsOffered+"%s[%s])) > 0\nunless\nsum by (target, probe) (rate("+metricname.Requests+"%s[%s])) > 0",
				p.sel(ps), w, p.sel(ps+`,disposition!="cancelled"`), w), o.HealthFor,
			fmt.Sprintf("%s/%s offers requests but none finish", pp.Target, pp.Probe),
			fmt.Sprintf("Probe %s against target %s offered requests over the last %s but none ended other than cancelled: requests hang in flight (new ones are shed at max_in_flight) or the prober is stuck.", pp.Probe, pp.Target, w))
		r.Labels["target"], r.Labels["probe"] = pp.Target, pp.Probe
		rs = append(rs, r)
	}
	return rs
}

// targetAlerts judge a target from the prober's side: down, unscraped,
// slow to reach, or too slow for the prober's schedule.
func (p builder) targetAlerts() []Rule {
	o := p.Options
	lw := plan.FmtDur(p.Scale(o.LatencyWindow))
	rs := append(p.targetDownAlerts(),
		p.healthRule(AlertScrapeFailing, SeverityTicket,
			fmt.Sprintf("max by (target) (%s%s) == 0", metricname.ServerScrapeSuccess, p.sel("")), o.HealthFor,
			"The prober cannot scrape the metrics of target {{ $labels.target }}",
			metricname.ServerScrapeSuccess+" is 0: the server's /metrics endpoint fails, so vllm:* series and the client/server comparison are missing. If requests fail too, the server is down."))
	// No pair exports schedule lag: the alert would read nothing
	// (the plan warns about each pair that leaves it out).
	if lag := p.formsOf(metricname.ScheduleLag); lag.classic || lag.native {
		rs = append(rs, p.healthRule(AlertScheduleLag, SeverityTicket,
			p.targetQuantile("0.99", metricname.ScheduleLag, "target, probe", lw, lag)+"\n> "+plan.FmtF(o.ScheduleLag.Seconds()), o.HealthFor,
			"Prober sends {{ $labels.target }}/{{ $labels.probe }} requests late (p99 lag "+durationFmt+")",
			fmt.Sprintf("The p99 delay between planned and actual send time over the last %s is above %s: the prober is CPU-starved or blocked, so the load is no longer open-loop and its latencies are suspect.", lw, plan.FmtDur(o.ScheduleLag))))
	}
	return append(rs,
		p.healthRule(AlertClientTTFTAboveServer, SeverityTicket,
			fmt.Sprintf("(%[1]s%[3]s - %[2]s%[3]s) > %[4]s\nand\n%[1]s%[3]s > %[5]s * %[2]s%[3]s", RecordClientTTFT, RecordServerTTFT, lw, plan.FmtF(o.TTFTGapMin.Seconds()), plan.FmtF(o.TTFTGapRatio)), o.LatencyFor,
			"Clients of {{ $labels.target }} wait "+durationFmt+" longer for the first token than the server reports",
			fmt.Sprintf("The prober's p50 TTFT over the last %s exceeds vLLM's own p50 vllm:time_to_first_token_seconds by more than %s and %sx: the time is lost outside the engine (network, proxy, TLS, API server front end), not in prefill or queueing.", lw, plan.FmtDur(o.TTFTGapMin), plan.FmtF(o.TTFTGapRatio))),
	)
}

// targetDownAlerts page per target when at least plan.TargetDownRatio of the
// requests that ended over the target's window, and at least
// plan.TargetDownMinRequests of them, ended in server_failure.
func (p builder) targetDownAlerts() []Rule {
	var rs []Rule
	for _, tp := range p.Targets {
		w := plan.FmtDur(tp.Window)
		ts := fmt.Sprintf("target=%q", tp.Name)
		if tp.Gateway {
			ts += "," + gatewaySeries
		}
		ended := p.sel(ts + `,disposition!="cancelled"`)
		r := p.healthRule(AlertTargetDown, SeverityPage,
			fmt.Sprintf("sum by (target) (rate(%[1]s%[2]s[%[3]s]))\n/\nsum by (target) (rate(%[1]s%[4]s[%[3]s]))\n>= %[5]s\nand\nsum by (target) (increase(%[1]s%[4]s[%[3]s])) >= %[6]d",
				metricname.Requests, p.sel(ts+`,disposition="server_failure"`), w, ended, plan.FmtF(plan.TargetDownRatio), plan.TargetDownMinRequests), p.Options.PageFor,
			"Target {{ $labels.target }} is down: "+percentFmt+" of probe requests fail",
			fmt.Sprintf("Over the last %s at least %d probe requests to target %s ended (cancelled ones left out: never sent or abandoned) and at least %s%% of them ended in server_failure (HTTP errors, refused connections, broken streams). Latency alerts for it are inhibited.",
				w, plan.TargetDownMinRequests, tp.Name, plan.FmtF(plan.TargetDownRatio*100)))
		r.Labels["target"] = tp.Name
		rs = append(rs, r)
	}
	return rs
}

// inFlightCapAlerts fire per pair on a sustained share of shed requests.
func (p builder) inFlightCapAlerts() []Rule {
	var rs []Rule
	for _, pp := range p.Pairs {
		w := plan.FmtDur(pp.CountWindow)
		forD := p.InFlightCapFor(pp.CountWindow)
		ps := pairMatchers(pp)
		r := p.healthRule(AlertInFlightCap, SeverityTicket,
			fmt.Sprintf("%s\n> %s", ShedExpr(p.jobMatcher()+","+ps, w), plan.FmtF(plan.InFlightCapRatio)), 0,
			fmt.Sprintf("%s/%s sheds %s of its requests at max_in_flight", pp.Target, pp.Probe, percentFmt),
			fmt.Sprintf("Over the last %s, %s of the requests probe %s offered to target %s were cancelled because max_in_flight requests were outstanding, "+
				"and the share has stayed above %s%% for %s. Shed requests are offered and not accepted: they burn the acceptance budget. "+
				"The server answers more slowly than the probe's rate needs, or max_in_flight is too low for the timeout.",
				w, percentFmt, pp.Probe, pp.Target, plan.FmtF(plan.InFlightCapRatio*100), plan.FmtDur(forD)))
		r.For = plan.FmtDur(forD)
		r.Labels["target"], r.Labels["probe"] = pp.Target, pp.Probe
		rs = append(rs, r)
	}
	return rs
}
