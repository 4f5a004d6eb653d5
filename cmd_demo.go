package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/alecthomas/kingpin/v2"

	"github.com/vllm-prober/vllm-prober/probe"
	"github.com/vllm-prober/vllm-prober/simulator"
	"github.com/vllm-prober/vllm-prober/status"
)

// demoFlags are the flags of `demo`.
type demoFlags struct {
	daemon   daemonFlags
	duration time.Duration
	interval time.Duration
	faults   bool
	seed     int64
}

func demoCommand(app *kingpin.Application) action {
	cmd := app.Command("demo", "Run the daemon against the embedded vLLM simulator with a built-in config, printing a live summary.")
	f := &demoFlags{}
	cmd.Flag("duration", "Stop after this long (0 runs until interrupted).").Default("0s").DurationVar(&f.duration)
	cmd.Flag("summary.interval", "How often to print the summary table.").Default("5s").DurationVar(&f.interval)
	cmd.Flag("faults", "Turn on a mix of simulator faults so failures show too.").BoolVar(&f.faults)
	cmd.Flag("seed", "Seed of the simulator and the probes.").Default("1").Int64Var(&f.seed)
	addWebFlags(cmd, &f.daemon, "127.0.0.1:9478")
	return func(ctx context.Context, logger *slog.Logger) int {
		if err := checkDemoFlags(f); err != nil {
			fmt.Fprintf(os.Stderr, "%s demo: error: %v\n", appName, err)
			return 2
		}
		if err := runDemo(ctx, logger, f, os.Stdout); err != nil {
			logger.Error("Demo failed", "err", err)
			return 1
		}
		return 0
	}
}

// checkDemoFlags refuses bad values of demo's own flags before anything
// starts: a negative --duration would otherwise run until interrupted.
func checkDemoFlags(f *demoFlags) error {
	if f.duration < 0 {
		return fmt.Errorf("--duration=%s: must not be negative (0 runs until interrupted)", f.duration)
	}
	if f.interval <= 0 {
		return fmt.Errorf("--summary.interval=%s: must be > 0", f.interval)
	}
	return nil
}

func runDemo(ctx context.Context, logger *slog.Logger, f *demoFlags, out io.Writer) error {
	if err := checkDemoFlags(f); err != nil {
		return err
	}
	if f.duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, f.duration)
		defer cancel()
	}
	opts := simulator.DefaultOptions()
	opts.Seed = f.seed
	opts.Logger = logger
	if f.faults {
		opts.Faults = demoFaults()
	}
	// The first simulator is the static target sim and, with a second,
	// a replica of the file_sd target fleet.
	var simURLs, replicas []string
	for i := range 2 {
		o := opts
		o.Seed += int64(i)
		sim, err := simulator.New(o)
		if err != nil {
			return fmt.Errorf("start simulator: %w", err)
		}
		u, err := sim.Start("127.0.0.1:0")
		if err != nil {
			return fmt.Errorf("start simulator: %w", err)
		}
		defer sim.Close()
		simURLs = append(simURLs, u)
		replicas = append(replicas, strings.TrimPrefix(u, "http://"))
	}
	simURL := simURLs[0]

	dir, err := os.MkdirTemp("", "vllm-prober-demo-")
	if err != nil {
		return fmt.Errorf("demo directory: %w", err)
	}
	// The directory outlives the demo, so its ledger can be read; the last
	// line says where it is.
	defer fmt.Fprintf(out, "%s%s (config, ledger, file_sd); remove it when done\n", demoDirKept, dir)
	sdPath := filepath.Join(dir, "fleet.json")
	sd, err := json.Marshal([]map[string]any{{"targets": replicas, "labels": map[string]string{"zone": "demo"}}})
	if err != nil {
		return fmt.Errorf("write demo file_sd: %w", err)
	}
	if err := os.WriteFile(sdPath, sd, 0o600); err != nil {
		return fmt.Errorf("write demo file_sd: %w", err)
	}
	cfgPath := filepath.Join(dir, "vllm-prober.yml")
	if err := os.WriteFile(cfgPath, []byte(demoConfig(simURL, sdPath, dir, f.seed)), 0o600); err != nil {
		return fmt.Errorf("write demo config: %w", err)
	}
	f.daemon.configFile = cfgPath

	summaries := newDemoSummaries(out, f.interval)
	defer summaries.stop()
	hooks := daemonHooks{
		listening: func(addrs []net.Addr) {
			fmt.Fprintf(out, "vllm-prober demo\n  simulator:   %s (model %s)\n", simURL, opts.Model)
			fmt.Fprintf(out, "  fleet:       %s, file_sd %s\n", strings.Join(replicas, ", "), sdPath)
			for _, a := range addrs {
				fmt.Fprintf(out, "  status page: http://%s/\n  metrics:     http://%s%s\n", a, a, f.daemon.telemetryPath)
			}
			fmt.Fprintf(out, "  config:      %s\n  ledger:      %s\nPress Ctrl-C to stop.\n\n", cfgPath, filepath.Join(dir, "ledger.jsonl"))
		},
		started: summaries.start,
		drained: summaries.final,
	}
	return runDaemon(ctx, logger, &f.daemon, hooks)
}

// demoDirKept starts the line the demo prints last: the path of its
// directory, kept after exit.
const demoDirKept = "demo directory kept: "

// demoSummaries prints the live summaries while the demo runs and the
// final table after the drain.
type demoSummaries struct {
	out      io.Writer
	interval time.Duration
	ctx      context.Context
	cancel   context.CancelFunc
	wg       sync.WaitGroup
}

func newDemoSummaries(out io.Writer, interval time.Duration) *demoSummaries {
	s := &demoSummaries{out: out, interval: interval}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	return s
}

// start prints d's summaries every interval until stop.
func (s *demoSummaries) start(d *daemon) {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		printSummaries(s.ctx, s.out, d.tracker, s.interval)
	}()
}

// stop ends the live summaries and waits until none is being printed.
func (s *demoSummaries) stop() {
	s.cancel()
	s.wg.Wait()
}

// final prints the final table once every offered request has ended (so
// it counts each once, as the ledger does) and the live summaries have
// stopped (so nothing prints after it).
func (s *demoSummaries) final(d *daemon) {
	s.stop()
	writeFinal(s.out, d.tracker.Snapshot())
}

// printSummaries prints the tracker's table every interval until ctx ends.
func printSummaries(ctx context.Context, out io.Writer, t *status.Tracker, interval time.Duration) {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-tick.C:
			writeSummary(out, now, t.Snapshot())
		}
	}
}

// writeSummary writes one compact table of every pair, with a legend of
// which columns count since start and which cover the window.
func writeSummary(out io.Writer, now time.Time, pairs []status.PairStats) {
	var window time.Duration
	for _, p := range pairs {
		window = max(window, p.Window)
	}
	fmt.Fprintf(out, "%s  since start: offered, in flight (now), accepted, failed; over the last %s: completed/s, goodput/s, acceptance, percentiles\n",
		now.Format("15:04:05"), window.Round(time.Second))
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "target\tprobe\toffered\tin flight\taccepted\tfailed\tcompleted/s\tgoodput/s\tacceptance\tTTFT p50\tTTFT p99\tITL p50\tITL p99\t\n")
	for _, p := range pairs {
		var failed uint64
		for d, n := range p.Dispositions {
			if d != probe.Accepted {
				failed += n
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%.2f\t%.2f\t%s\t%s\t%s\t%s\t%s\t\n",
			pairTarget(p), p.Probe, p.Offered, p.InFlight, p.AcceptedSinceStart, failed, p.Completed, p.Goodput,
			status.FormatPct(p.Acceptance), status.FormatMs(p.TTFTP50), status.FormatMs(p.TTFTP99),
			status.FormatMs(p.ITLP50), status.FormatMs(p.ITLP99))
	}
	tw.Flush()
	fmt.Fprintln(out)
}

// writeFinal writes the counts since start per disposition, after the
// drain: they equal the ledger's records. Acceptance is accepted /
// (offered - abandoned) over the whole run.
func writeFinal(out io.Writer, pairs []status.PairStats) {
	fmt.Fprintln(out, "final, after every request ended (counts since start, as in the ledger):")
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprint(tw, "target\tprobe\toffered")
	for _, d := range probe.Dispositions {
		fmt.Fprintf(tw, "\t%s", d)
	}
	fmt.Fprint(tw, "\tabandoned\tacceptance\t\n")
	for _, p := range pairs {
		fmt.Fprintf(tw, "%s\t%s\t%d", pairTarget(p), p.Probe, p.Offered)
		for _, d := range probe.Dispositions {
			fmt.Fprintf(tw, "\t%d", p.Dispositions[d])
		}
		fmt.Fprintf(tw, "\t%d\t%s\t\n", p.AbandonedSinceStart, status.FormatPct(p.AcceptanceSinceStart()))
	}
	tw.Flush()
}

// pairTarget is a pair's target column in the demo's tables: the target,
// and for a replica "@host:port" (config.PairKey's form), one word.
func pairTarget(p status.PairStats) string {
	if p.Replica == "" {
		return p.Target
	}
	return p.Target + "@" + p.Replica
}

// demoConfig is the built-in config: a chat probe with a quality check and
// a completions probe, fast enough that numbers move within seconds, on the
// simulator at simURL, and the chat probe on each replica of a fleet the
// file_sd file sdPath lists.
func demoConfig(simURL, sdPath, dir string, seed int64) string {
	return fmt.Sprintf(`# Built-in demo config, written by vllm-prober demo.
global:
  ledger: {path: %q, record_text: failures}
  server_metrics: {interval: 5s, timeout: 2s}
targets:
  - name: sim
    url: %s
  - name: fleet
    discovery: {file_sd: {files: [%q]}}
    probes: [chat-arithmetic]
probes:
  - name: chat-arithmetic
    api: chat
    rate: 2
    max_in_flight: 16
    timeout: 10s
    request: {max_tokens: 16, temperature: 0}
    workload:
      prompts:
        - messages: [{role: user, content: "What is 12*12? Digits only."}]
          expect: {regex: '\b144\b'}
        - messages: [{role: user, content: "What is 7+8? Digits only."}]
          expect: {regex: '\b15\b'}
    fingerprint: {tokens: 8, confirm: 3}
    slo: {ttft: 500ms, tpot: 50ms, e2el: 5s}
    quality: {finish_reasons: [stop, length], min_output_tokens: 1}
    objective: 0.99
  - name: completions-random
    api: completions
    rate: 3
    timeout: 15s
    request: {ignore_eos: true}
    workload:
      random: {input_tokens: 256, output_tokens: 64, range_ratio: 0.2, seed: %d}
    slo: {ttft: 1s, tpot: 100ms, e2el: 10s}
    objective: 0.99
`, filepath.Join(dir, "ledger.jsonl"), simURL, sdPath, seed)
}

// demoFaults is the mix --faults turns on: a few percent of each failure a
// real server shows, so every disposition appears within a minute.
func demoFaults() simulator.Faults {
	return simulator.Faults{
		HTTP500:          0.02,
		HTTP429:          0.01,
		SlowHeaders:      0.02,
		SlowHeadersDelay: 700 * time.Millisecond,
		Stall:            0.01,
		StallDuration:    20 * time.Second,
		Disconnect:       0.01,
		ErrorEvent:       0.01,
		MalformedEvent:   0.01,
		NoDone:           0.01,
		BadAnswer:        0.03,
	}
}
