package perf

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"
)

// ScaleOptions configures Scale.
type ScaleOptions struct {
	Binary           string // the vllm-prober binary
	Targets, Probes  int
	Rate             float64 // per pair, requests/s
	Warmup, Duration time.Duration
	ScrapeEvery      time.Duration // /metrics scrapes, from the warm-up on (0 = never)
	Fetches          int           // timed /metrics and status page fetches after measuring
	NoServerMetrics  bool          // metrics_path "": the targets' /metrics are not scraped
	Accept           string        // how the scrapes and timed fetches ask for /metrics (CostOptions.Accept)
}

// Scale runs one daemon probing opts.Targets static targets (each its own
// loopback address of one in-process simulator, so each has its own
// connections and server-metrics scrape) with opts.Probes chat probes each
// at opts.Rate requests/s per pair, in lean mode: histograms [ttft, e2el],
// native only (docs/design.md, Series budget). It measures the daemon as
// Fleet does.
func Scale(ctx context.Context, opts ScaleOptions) (FleetResult, error) {
	out := scaleResult(opts)
	err := runDaemon(ctx, &out, scaleRun(opts))
	return out, err
}

// ScaleBeside is Scale with a daemon of baseline running beside the one of
// opts.Binary, on the same configuration against the same servers and
// measured over the same window: a before and after that the machine's
// load cannot tilt, as it tilts two runs one after the other.
func ScaleBeside(ctx context.Context, opts ScaleOptions, baseline string) (ours, theirs FleetResult, err error) {
	ours, theirs = scaleResult(opts), scaleResult(opts)
	err = runDaemons(ctx, []*FleetResult{&ours, &theirs}, []string{opts.Binary, baseline}, scaleRun(opts))
	return ours, theirs, err
}

// scaleResult is a Scale result before the run: its name and load.
func scaleResult(opts ScaleOptions) FleetResult {
	return FleetResult{CostResult: CostResult{
		Name:    fmt.Sprintf("%d targets × %d probes @ %g/s", opts.Targets, opts.Probes, opts.Rate),
		Targets: opts.Targets, Probes: opts.Probes, Rate: opts.Rate}}
}

// scaleRun is the daemon run of Scale.
func scaleRun(opts ScaleOptions) daemonRun {
	return daemonRun{
		Binary: opts.Binary, Servers: opts.Targets,
		Config:  func(dir string, addrs []string) (string, error) { return scaleConfig(dir, addrs, opts), nil },
		Measure: CostOptions{Warmup: opts.Warmup, Duration: opts.Duration, ScrapeEvery: opts.ScrapeEvery, Accept: opts.Accept},
		Fetches: opts.Fetches,
	}
}

// scaleConfig is the daemon's configuration for Scale: one static target
// per address, every probe a chat request with a 16-token answer, SLOs
// set, the ledger on, histograms lean and native only.
func scaleConfig(dir string, addrs []string, o ScaleOptions) string {
	var b strings.Builder
	fmt.Fprintf(&b, "global:\n  ledger: {path: %q}\n  histograms: [ttft, e2el]\n  classic_buckets: false\ntargets:\n",
		filepath.Join(dir, "ledger.jsonl"))
	for i, addr := range addrs {
		fmt.Fprintf(&b, "  - name: t-%03d\n    url: http://%s\n    model: sim-llama\n", i, addr)
		if o.NoServerMetrics {
			b.WriteString("    metrics_path: \"\"\n")
		}
	}
	b.WriteString("probes:\n")
	for i := range o.Probes {
		fmt.Fprintf(&b, "  - name: chat-%d\n    rate: %g\n    api: chat\n"+
			"    workload: {random: {input_tokens: 128, output_tokens: 16}}\n    request: {ignore_eos: true}\n"+
			"    slo: {ttft: 1s, tpot: 100ms, e2el: 10s}\n", i, o.Rate)
	}
	return b.String()
}
