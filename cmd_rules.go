package main

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"os"
	"time"

	"github.com/alecthomas/kingpin/v2"

	"github.com/vllm-prober/vllm-prober/config"
	"github.com/vllm-prober/vllm-prober/internal/filewrite"
	"github.com/vllm-prober/vllm-prober/rules"
	"github.com/vllm-prober/vllm-prober/rules/promtest"
)

// rulesCommand registers `rules`: Prometheus rules (or their promtool unit
// tests) generated from the config.
func rulesCommand(app *kingpin.Application) action {
	cmd := app.Command("rules", "Print Prometheus recording and alerting rules (or, with --tests, their promtool unit tests) generated from the config.")
	var (
		configFile, output string
		tests              bool
		o                  rules.Options
	)
	cmd.Flag("config.file", "Prober configuration file.").Default("vllm-prober.yml").StringVar(&configFile)
	cmd.Flag("tests", "Print promtool unit tests for the generated rules instead of the rules.").BoolVar(&tests)
	cmd.Flag("output", "Write to this file instead of standard output.").Short('o').StringVar(&output)
	cmd.Flag("job", "Prometheus job label of the prober's scrape.").Default("vllm-prober").StringVar(&o.Job)
	cmd.Flag("window-scale", "Multiply every window and for: duration by this factor (1/60 = 0.0166667 turns 1h into 1m, for tests).").Default("1").Float64Var(&o.WindowScale)
	cmd.Flag("min-requests", "Requests the short window of a burn-rate pair must hold; fewer widen the pair.").Default("30").Float64Var(&o.MinRequests)
	cmd.Flag("min-latency-samples", "Requests a p99 latency window must hold; fewer widen it.").Default("100").Float64Var(&o.MinLatencySamples)
	cmd.Flag("page-for", "for: of page alerts (burn rate and target down); 0: both windows already confirm a burn.").Default("0s").DurationVar(&o.PageFor)
	cmd.Flag("ticket-for", "for: of ticket burn-rate alerts and of the in-flight cap alert (at least two of its windows).").Default("15m").DurationVar(&o.TicketFor)
	cmd.Flag("latency-for", "for: of p99 latency and TTFT divergence alerts.").Default("10m").DurationVar(&o.LatencyFor)
	cmd.Flag("health-for", "for: of prober-health and discovery alerts (VLLMProbeNoReplicas pages after it too).").Default("5m").DurationVar(&o.HealthFor)
	cmd.Flag("latency-window", "Rate window of p99 latency alerts.").Default("10m").DurationVar(&o.LatencyWindow)
	cmd.Flag("schedule-lag", "p99 schedule lag above which the prober is starved.").Default("1s").DurationVar(&o.ScheduleLag)
	cmd.Flag("runbook-url", "Base URL of the runbook_url annotations.").Default(rules.DefaultRunbookURL).StringVar(&o.RunbookURL)
	cmd.Flag("rule-file", "Rule file name the generated tests load (with --tests).").Default("rules.yml").StringVar(&o.RuleFileName)
	return func(_ context.Context, logger *slog.Logger) int {
		if err := checkRulesFlags(o); err != nil {
			fmt.Fprintf(os.Stderr, "%s rules: error: %v\n", appName, err)
			return 2
		}
		cfg, err := config.Load(configFile)
		if err != nil {
			logger.Error("Error loading config", "err", err)
			return 1
		}
		out, err := renderRules(cfg, o, tests, logger)
		if err != nil {
			logger.Error("Cannot generate rules", "err", err)
			return 1
		}
		if err := writeOutput(output, out); err != nil {
			logger.Error("Cannot write rules", "err", err)
			return 1
		}
		return 0
	}
}

// checkRulesFlags refuses flag values the generator cannot honour:
// rules.Options takes a zero as "use the default", so a 0 given on the
// command line would otherwise be replaced silently, and a negative or
// NaN value would yield windows Prometheus cannot evaluate.
func checkRulesFlags(o rules.Options) error {
	for _, f := range []struct {
		name string
		v    float64
	}{
		{"window-scale", o.WindowScale},
		{"min-requests", o.MinRequests},
		{"min-latency-samples", o.MinLatencySamples},
	} {
		if !(f.v > 0) || math.IsInf(f.v, 0) {
			return fmt.Errorf("--%s=%v: must be a finite number > 0", f.name, f.v)
		}
	}
	if o.PageFor < 0 {
		return fmt.Errorf("--page-for=%s: must not be negative (0: no for:)", o.PageFor)
	}
	for _, f := range []struct {
		name string
		v    time.Duration
	}{
		{"ticket-for", o.TicketFor},
		{"latency-for", o.LatencyFor},
		{"health-for", o.HealthFor},
		{"latency-window", o.LatencyWindow},
		{"schedule-lag", o.ScheduleLag},
	} {
		if f.v <= 0 {
			return fmt.Errorf("--%s=%s: must be > 0", f.name, f.v)
		}
	}
	for _, f := range []struct{ name, v string }{
		{"job", o.Job},
		{"runbook-url", o.RunbookURL},
		{"rule-file", o.RuleFileName},
	} {
		if f.v == "" {
			return fmt.Errorf("--%s: must not be empty", f.name)
		}
	}
	return nil
}

// renderRules generates the rules or tests and logs every low-traffic
// warning (they also end up in the file's header and annotations).
func renderRules(cfg *config.Config, o rules.Options, tests bool, logger *slog.Logger) ([]byte, error) {
	rf, warnings, err := rules.Generate(cfg, o)
	if err != nil {
		return nil, err
	}
	for _, w := range warnings {
		logger.Warn("Alert rule adjusted", "target", w.Target, "probe", w.Probe, "alert", w.Alert, "detail", w.Message)
	}
	if !tests {
		return rules.Marshal(rf, warnings)
	}
	tf, err := promtest.Generate(cfg, o)
	if err != nil {
		return nil, err
	}
	return rules.Marshal(tf, nil)
}

func writeOutput(path string, b []byte) error {
	if path == "" {
		_, err := os.Stdout.Write(b)
		return err
	}
	// Whole or not at all, so a failed write leaves the previous rules in
	// place instead of half a file Prometheus would load.
	if err := filewrite.Whole(path, b); err != nil {
		return fmt.Errorf("write output %s: %w", path, err)
	}
	return nil
}
