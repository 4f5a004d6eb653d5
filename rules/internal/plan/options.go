package plan

import (
	"errors"
	"fmt"
	"time"
)

// Warning is a finding about a pair's (or, with no Probe, a target's) alert
// that the operator should know:
// windows widened or an alert dropped because of low traffic or an
// objective the windows cannot judge.
type Warning struct {
	Target  string
	Probe   string
	Alert   string
	Message string
}

// String formats the warning for stderr. A warning about a target's
// alert (VLLMProbeTargetDown) has no probe.
func (w Warning) String() string {
	if w.Probe == "" {
		return fmt.Sprintf("target %q %s: %s", w.Target, w.Alert, w.Message)
	}
	return fmt.Sprintf("target %q probe %q %s: %s", w.Target, w.Probe, w.Alert, w.Message)
}

// Options tune the generated rules. Zero values take the documented defaults.
type Options struct {
	// Job is the Prometheus job label of the prober's scrape. Default "vllm-prober".
	Job string
	// WindowScale multiplies every window and `for:` duration, so tests and
	// the e2e can fire alerts in minutes (1/60 turns 1h into 1m). Default 1.
	WindowScale float64
	// MinRequests is how many requests the short window of a burn-rate pair
	// must hold on average before it is trusted. Default 30.
	MinRequests float64
	// MinLatencySamples is how many requests a p99 latency window must hold.
	// Default 100 (below that the p99 is the maximum of a few samples).
	MinLatencySamples float64
	// PageFor, TicketFor, LatencyFor and HealthFor are the `for:` durations
	// of page alerts (burn rate and target down), ticket burn alerts, p99
	// latency alerts and prober-health alerts (the discovery alerts, the
	// page VLLMProbeNoReplicas among them, take HealthFor: a gauge has no
	// window to confirm it). Defaults 0, 15m, 10m, 5m: a page's two
	// windows already confirm the burn, so a for: would only delay it.
	PageFor, TicketFor, LatencyFor, HealthFor time.Duration
	// LatencyWindow is the rate window of the p99 latency alerts and of the
	// client/server TTFT and schedule lag alerts. Default 10m.
	LatencyWindow time.Duration
	// ScheduleLag is the p99 schedule lag above which the prober is
	// considered too starved to measure. Default 1s.
	ScheduleLag time.Duration
	// TTFTGapMin and TTFTGapRatio: client p50 TTFT must exceed the server's
	// by at least TTFTGapMin and be TTFTGapRatio times it. Defaults 500ms, 2.
	TTFTGapMin   time.Duration
	TTFTGapRatio float64
	// RunbookURL is the base of every alert's runbook_url annotation.
	RunbookURL string
	// RuleFileName is the rule file the generated promtool tests load.
	// Default "rules.yml".
	RuleFileName string
}

// DefaultRunbookURL is where docs/alerts.md is published.
const DefaultRunbookURL = "https://github.com/vllm-prober/vllm-prober/blob/main/docs/alerts.md"

// withDefaults fills in the documented defaults of the zero values.
func (o Options) withDefaults() (Options, error) {
	if o.WindowScale < 0 || o.MinRequests < 0 || o.MinLatencySamples < 0 || o.TTFTGapRatio < 0 {
		return o, errors.New("window scale, minimum requests, minimum latency samples and ttft gap ratio must not be negative")
	}
	setStr := func(p *string, v string) {
		if *p == "" {
			*p = v
		}
	}
	setF := func(p *float64, v float64) {
		if *p == 0 {
			*p = v
		}
	}
	setD := func(p *time.Duration, v time.Duration) {
		if *p == 0 {
			*p = v
		}
	}
	setStr(&o.Job, "vllm-prober")
	setStr(&o.RunbookURL, DefaultRunbookURL)
	setStr(&o.RuleFileName, "rules.yml")
	setF(&o.WindowScale, 1)
	setF(&o.MinRequests, 30)
	setF(&o.MinLatencySamples, 100)
	setF(&o.TTFTGapRatio, 2)
	setD(&o.TicketFor, 15*time.Minute)
	setD(&o.LatencyFor, 10*time.Minute)
	setD(&o.HealthFor, 5*time.Minute)
	setD(&o.LatencyWindow, 10*time.Minute)
	setD(&o.ScheduleLag, time.Second)
	setD(&o.TTFTGapMin, 500*time.Millisecond)
	return o, nil
}
