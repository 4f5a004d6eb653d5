// Package rules generates Prometheus recording and alerting rules from a
// vllm-prober configuration, so the alerts never drift from the probes
// that feed them. rules/internal/plan decides the windows and thresholds;
// this package renders them as PromQL; rules/promtest writes the promtool
// unit tests that prove the rendered rules.
//
// Recording rules are aggregated `by (target, probe)` and shared by every
// pair; the alerts are written per (target, probe) because each pair has its
// own objective, SLOs and, at low rates, its own widened windows.
//
// The recording rules follow the accounting of probe/result.go
// (Result.Abandoned, Result.ServerCompleted), from the collector's
// counters:
//
//   - acceptance ratio = accepted / (every terminal disposition - the
//     requests the prober abandoned, vllm_probe_failures_total with reason
//     shutdown or removed). Requests cancelled at max_in_flight
//     (in_flight_cap) are overload shedding: they stay in the denominator
//     and burn the error budget.
//   - completed throughput = accepted + latency_failure + quality_failure
//     requests, plus the server_failure requests whose reason says the
//     server completed the response (http_4xx, http_429, http_5xx,
//     redirect, stream_error, protocol, no_done), per second.
//   - goodput = accepted requests per second.
//
// rules/internal/plan/accounting.go spells those label values, since
// rules does not import probe; a test compares them with probe's.
package rules

import (
	"slices"

	"github.com/vllm-prober/vllm-prober/config"
	"github.com/vllm-prober/vllm-prober/rules/internal/plan"
	"github.com/vllm-prober/vllm-prober/rules/internal/rulefile"
)

// Options tune the generated rules. Zero values take the documented
// defaults; rules/promtest takes the same options.
type Options = plan.Options

// Warning is a finding about a pair's (or, with no Probe, a target's)
// alert: windows widened or an alert dropped.
type Warning = plan.Warning

// DefaultRunbookURL is where docs/alerts.md is published.
const DefaultRunbookURL = plan.DefaultRunbookURL

// Severities of the generated alerts.
const (
	SeverityPage   = plan.SeverityPage
	SeverityTicket = plan.SeverityTicket
)

// builder renders the rules of a plan.
type builder struct{ *plan.Plan }

// RuleFile is a Prometheus rule file.
type RuleFile = rulefile.RuleFile

// RuleGroup is one group of rules evaluated together.
type RuleGroup = rulefile.RuleGroup

// Rule is one recording (Record set) or alerting (Alert set) rule.
type Rule = rulefile.Rule

// Generate builds the rule file for cfg. Warnings list windows that were
// widened or alerts that were dropped; the same text is in the annotations
// of widened rules.
func Generate(cfg *config.Config, o Options) (*RuleFile, []Warning, error) {
	pl, err := plan.New(cfg, o)
	if err != nil {
		return nil, nil, err
	}
	p := builder{pl}
	// Alerts share a group with the recording rules they read, so they see
	// this evaluation's values (groups are evaluated independently).
	rf := rulefile.Rendered(pl,
		RuleGroup{Name: "vllm-prober.slo", Rules: slices.Concat(p.recordingRules(), p.fleetRecordingRules(), p.burnAlerts(), p.fleetAlerts())},
		RuleGroup{Name: "vllm-prober.latency", Rules: p.latencyAlerts()},
		RuleGroup{Name: "vllm-prober.health", Rules: append(p.ttftRecordingRules(), p.healthAlerts()...)},
	)
	if drift := p.outputChangedAlerts(); len(drift) > 0 {
		rf.Groups = append(rf.Groups, RuleGroup{Name: "vllm-prober.output", Rules: drift})
	}
	return rf, p.Warnings, nil
}
