package rules

import (
	"fmt"
	"time"

	"github.com/vllm-prober/vllm-prober/collector/metricname"
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

// targetDownRatio is the share of the requests that ended, cancelled ones
// left out, that must end in server_failure for a target to count as
// down. Cancelled requests are left out because they say nothing about
// the server: shed ones were never sent (a blackholed server that holds
// every connection until the dial times out sheds most of its offered
// requests) and abandoned ones were given up by the prober.
const targetDownRatio = 0.9

// targetDownMinRequests is how many requests, cancelled ones left out,
// must have ended in a target's window before VLLMProbeTargetDown judges
// it. The window is chosen to hold minCountWindow of them, so a single
// lost request of a low-rate target is at most one in several and never
// 90%; and right after the prober starts, a few early failures do not page
// before this many requests have ended. With this guard the alert needs
// no for: of its own (it takes PageFor).
const targetDownMinRequests = minCountWindow / 2

// inFlightCapRatio is the share of a pair's offered requests shed at
// max_in_flight, over the pair's count window, above which
// VLLMProbeInFlightCapReached fires once it has held for the ticket for:
// (at least two windows, so one shed request, which leaves the window
// after one window, never fires it).
const inFlightCapRatio = 0.01

// percentFmt renders an alert's ratio value as a percentage.
const percentFmt = `{{ $value | humanizePercentage }}`

func (p *plan) healthRule(alert, severity, expr string, forD time.Duration, summary, description string) Rule {
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

// healthAlerts are the prober-health alerts: the prober, each pair, each target.
func (p *plan) healthAlerts() []Rule {
	rs := p.proberAlerts()
	rs = append(rs, p.notCompletingAlerts()...)
	rs = append(rs, p.inFlightCapAlerts()...)
	return append(rs, p.targetAlerts()...)
}

// proberAlerts watch the prober process itself.
func (p *plan) proberAlerts() []Rule {
	o := p.o
	w30 := fmtDur(p.scale(30 * time.Minute))
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
func (p *plan) notCompletingAlerts() []Rule {
	var rs []Rule
	o := p.o
	for _, pp := range p.pairs {
		w := fmtDur(pp.CountWindow)
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
func (p *plan) targetAlerts() []Rule {
	o := p.o
	lw := fmtDur(p.scale(o.LatencyWindow))
	rs := append(p.targetDownAlerts(),
		p.healthRule(AlertScrapeFailing, SeverityTicket,
			fmt.Sprintf("max by (target) (%s%s) == 0", metricname.ServerScrapeSuccess, p.sel("")), o.HealthFor,
			"The prober cannot scrape the metrics of target {{ $labels.target }}",
			metricname.ServerScrapeSuccess+" is 0: the server's /metrics endpoint fails, so vllm:* series and the client/server comparison are missing. If requests fail too, the server is down."))
	// No pair exports schedule lag: the alert would read nothing
	// (plan.warnUncovered names the pairs).
	if lag := p.formsOf(metricname.ScheduleLag); lag.classic || lag.native {
		rs = append(rs, p.healthRule(AlertScheduleLag, SeverityTicket,
			quantileExpr("0.99", metricname.ScheduleLag, p.sel(""), "target, probe", lw, lag)+"\n> "+fmtF(o.ScheduleLag.Seconds()), o.HealthFor,
			"Prober sends {{ $labels.target }}/{{ $labels.probe }} requests late (p99 lag "+durationFmt+")",
			fmt.Sprintf("The p99 delay between planned and actual send time over the last %s is above %s: the prober is CPU-starved or blocked, so the load is no longer open-loop and its latencies are suspect.", lw, fmtDur(o.ScheduleLag))))
	}
	return append(rs,
		p.healthRule(AlertClientTTFTAboveServer, SeverityTicket,
			fmt.Sprintf("(%[1]s%[3]s - %[2]s%[3]s) > %[4]s\nand\n%[1]s%[3]s > %[5]s * %[2]s%[3]s", RecordClientTTFT, RecordServerTTFT, lw, fmtF(o.TTFTGapMin.Seconds()), fmtF(o.TTFTGapRatio)), o.LatencyFor,
			"Clients of {{ $labels.target }} wait "+durationFmt+" longer for the first token than the server reports",
			fmt.Sprintf("The prober's p50 TTFT over the last %s exceeds vLLM's own p50 vllm:time_to_first_token_seconds by more than %s and %sx: the time is lost outside the engine (network, proxy, TLS, API server front end), not in prefill or queueing.", lw, fmtDur(o.TTFTGapMin), fmtF(o.TTFTGapRatio))),
	)
}

// targetDownAlerts page per target when at least targetDownRatio of the
// requests that ended over the target's window, and at least
// targetDownMinRequests of them, ended in server_failure.
func (p *plan) targetDownAlerts() []Rule {
	var rs []Rule
	for _, tp := range p.targets {
		w := fmtDur(tp.Window)
		ts := fmt.Sprintf("target=%q", tp.Name)
		if tp.Gateway {
			ts += "," + gatewaySeries
		}
		ended := p.sel(ts + `,disposition!="cancelled"`)
		r := p.healthRule(AlertTargetDown, SeverityPage,
			fmt.Sprintf("sum by (target) (rate(%[1]s%[2]s[%[3]s]))\n/\nsum by (target) (rate(%[1]s%[4]s[%[3]s]))\n>= %[5]s\nand\nsum by (target) (increase(%[1]s%[4]s[%[3]s])) >= %[6]d",
				metricname.Requests, p.sel(ts+`,disposition="server_failure"`), w, ended, fmtF(targetDownRatio), targetDownMinRequests), p.o.PageFor,
			"Target {{ $labels.target }} is down: "+percentFmt+" of probe requests fail",
			fmt.Sprintf("Over the last %s at least %d probe requests to target %s ended (cancelled ones left out: never sent or abandoned) and at least %s%% of them ended in server_failure (HTTP errors, refused connections, broken streams). Latency alerts for it are inhibited.",
				w, targetDownMinRequests, tp.Name, fmtF(targetDownRatio*100)))
		r.Labels["target"] = tp.Name
		rs = append(rs, r)
	}
	return rs
}

// inFlightCapFor is the for: of the in-flight cap alert over window w.
func (p *plan) inFlightCapFor(w time.Duration) time.Duration {
	return max(p.scale(p.o.TicketFor), 2*w)
}

// inFlightCapAlerts fire per pair on a sustained share of shed requests.
func (p *plan) inFlightCapAlerts() []Rule {
	var rs []Rule
	for _, pp := range p.pairs {
		w := fmtDur(pp.CountWindow)
		forD := p.inFlightCapFor(pp.CountWindow)
		ps := pairMatchers(pp)
		r := p.healthRule(AlertInFlightCap, SeverityTicket,
			fmt.Sprintf("%s\n> %s", ShedExpr(p.jobMatcher()+","+ps, w), fmtF(inFlightCapRatio)), 0,
			fmt.Sprintf("%s/%s sheds %s of its requests at max_in_flight", pp.Target, pp.Probe, percentFmt),
			fmt.Sprintf("Over the last %s, %s of the requests probe %s offered to target %s were cancelled because max_in_flight requests were outstanding, "+
				"and the share has stayed above %s%% for %s. Shed requests are offered and not accepted: they burn the acceptance budget. "+
				"The server answers more slowly than the probe's rate needs, or max_in_flight is too low for the timeout.",
				w, percentFmt, pp.Probe, pp.Target, fmtF(inFlightCapRatio*100), fmtDur(forD)))
		r.For = fmtDur(forD)
		r.Labels["target"], r.Labels["probe"] = pp.Target, pp.Probe
		rs = append(rs, r)
	}
	return rs
}
