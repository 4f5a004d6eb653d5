package perf

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"

	"github.com/vllm-prober/vllm-prober/internal/perf/naive"
	"github.com/vllm-prober/vllm-prober/internal/perf/proc"
	"github.com/vllm-prober/vllm-prober/internal/wait"
)

// CostResult is what the daemon process used while probing.
type CostResult struct {
	Name            string
	Targets, Probes int
	Rate            float64   // per pair, requests/s
	Start           time.Time // when the measured window began
	Duration        time.Duration
	Requests        float64       // vllm_probe_requests_total growth over Duration
	CPU             time.Duration // on-CPU time of every thread over Duration
	CPUTicks        time.Duration // utime+stime growth (10 ms resolution), a cross-check
	RSS, PeakRSS    int64         // VmRSS at the end and VmHWM, bytes
	ScrapeBytes     int           // size of the last /metrics answer
	CorePercent     float64       // CPU / Duration, percent of one core
	CPUPerRequest   time.Duration
	// Voluntary and Involuntary are the daemon threads' context switches
	// over Duration: voluntary ones count its wake-ups (a load-independent
	// measure of what the CPU share depends on), involuntary ones grow
	// with the load.
	Voluntary, Involuntary int64
	DaemonPID, SimPID      int
}

// CostOptions configures Cost.
type CostOptions struct {
	Binary          string // the vllm-prober binary
	Targets, Probes int
	Rate            float64
	// OutputTokens is the streamed answer's length of the random
	// workloads (0: 64).
	OutputTokens int
	// Env is added to the daemon's environment (e.g. GOMAXPROCS=1).
	Env      []string
	Warmup   time.Duration
	Duration time.Duration
	// ScrapeEvery scrapes /metrics as Prometheus would, from the start of
	// the warm-up (0 = never).
	ScrapeEvery time.Duration
	// Accept is the Accept header of those scrapes and of the timed
	// fetches of /metrics: "" asks for the text format, as Go's client
	// and curl do; AcceptOpenMetrics and AcceptProtobuf ask as Prometheus
	// does. The requests are counted in it too; the size reported is of
	// a text answer read after the window.
	Accept string
}

// The Accept headers Prometheus 2 scrapes with (CostOptions.Accept): by
// default, and with native histograms on, which lean mode's native-only
// histograms need (docs/deploy.md).
const (
	AcceptOpenMetrics = "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75," +
		"text/plain;version=0.0.4;q=0.5,*/*;q=0.1"
	AcceptProtobuf = "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited," +
		"application/openmetrics-text;version=1.0.0;q=0.8,application/openmetrics-text;version=0.0.1;q=0.75," +
		"text/plain;version=0.0.4;q=0.5,*/*;q=0.1"
)

// Cost runs the simulator and the daemon as two processes of opts.Binary,
// the daemon probing opts.Targets targets (all served by the one
// simulator) with opts.Probes probes each at opts.Rate requests/s, with the
// ledger on and server metrics scraped at the default interval. After the
// warm-up it measures the daemon's CPU time (/proc/PID/task/*/schedstat,
// nanoseconds) and memory (/proc/PID/status) over opts.Duration; the
// simulator's CPU is its own process's and does not count.
func Cost(ctx context.Context, opts CostOptions) (CostResult, error) {
	if opts.OutputTokens == 0 {
		opts.OutputTokens = 64
	}
	name := fmt.Sprintf("%d×%d @ %g/s, %d tokens", opts.Targets, opts.Probes, opts.Rate, opts.OutputTokens)
	if len(opts.Env) > 0 {
		name += ", " + strings.Join(opts.Env, " ")
	}
	out := CostResult{Name: name,
		Targets: opts.Targets, Probes: opts.Probes, Rate: opts.Rate}
	dir, err := os.MkdirTemp("", "vllm-prober-perf-")
	if err != nil {
		return out, fmt.Errorf("temp dir: %w", err)
	}
	defer os.RemoveAll(dir)
	sim, err := startCostSimulator(ctx, opts.Binary)
	if err != nil {
		return out, err
	}
	defer sim.Stop()
	out.SimPID = sim.PID()
	d, err := startDaemonEnv(ctx, opts.Binary, dir, costConfig("http://"+sim.Addr, filepath.Join(dir, "ledger.jsonl"), opts), opts.Env)
	if err != nil {
		return out, err
	}
	defer d.Stop()
	out.DaemonPID = d.PID()
	err = measure(ctx, &out, "http://"+d.Addr+"/metrics", opts)
	return out, err
}

// startCostSimulator starts the simulator of the cost runs: binary's
// simulate, no jitter, never queueing.
func startCostSimulator(ctx context.Context, binary string) (*proc.Process, error) {
	sim, err := proc.Start(ctx, binary, proc.SimulatorReady, "simulate", "--web.listen-address=127.0.0.1:0", "--jitter=0",
		"--max-num-seqs=1024", "--decode-per-seq=20us")
	if err != nil {
		return nil, fmt.Errorf("simulator: %w", err)
	}
	return sim, nil
}

// FloorCost measures the naive client (floor) as Cost measures the
// daemon: the simulator as Cost starts it, and the client as a process of
// its own, command with the simulator's URL, opts.Rate and
// opts.OutputTokens added as the flags naive.Serve's caller reads
// (-floor.client, -floor.rate, -floor.tokens). The client sends the
// requests alone: no ledger, no server metrics, no /metrics, no judging.
// Its requests are the ones the simulator finished. It is the floor of
// what a streamed request costs a Go process on this machine.
func FloorCost(ctx context.Context, opts CostOptions, command []string) (CostResult, error) {
	if opts.OutputTokens == 0 {
		opts.OutputTokens = 64
	}
	out := CostResult{Name: fmt.Sprintf("naive client @ %g/s, %d tokens", opts.Rate, opts.OutputTokens), Targets: 1, Probes: 1, Rate: opts.Rate}
	sim, err := startCostSimulator(ctx, opts.Binary)
	if err != nil {
		return out, err
	}
	defer sim.Stop()
	out.SimPID = sim.PID()
	simURL := "http://" + sim.Addr
	args := append(command[1:len(command):len(command)], "-floor.client="+simURL,
		fmt.Sprintf("-floor.rate=%g", opts.Rate), fmt.Sprintf("-floor.tokens=%d", opts.OutputTokens))
	client, err := proc.StartCommand(exec.CommandContext(ctx, command[0], args...), naive.Ready)
	if err != nil {
		return out, fmt.Errorf("naive client: %w", err)
	}
	defer client.Stop()
	out.DaemonPID = client.PID()
	opts.ScrapeEvery = 0 // it has no /metrics
	err = measureCounting(ctx, &out, func(string) (float64, int, error) { return requestsTotal(simURL+"/metrics", simulatorRequests, "") }, opts)
	out.ScrapeBytes = 0 // the simulator's, not the client's
	return out, err
}

// measure samples the daemon after the warm-up and over opts.Duration,
// scraping /metrics every opts.ScrapeEvery through both, asking as
// opts.Accept says.
func measure(ctx context.Context, out *CostResult, metricsURL string, opts CostOptions) error {
	return measureCounting(ctx, out, func(accept string) (float64, int, error) { return requestsTotal(metricsURL, probeRequests, accept) }, opts)
}

// measureCounting is measure with the requests counted by count (their
// total so far and the size of the answer it read, asking as its argument
// says), which also serves as the scrape every opts.ScrapeEvery, through
// the warm-up as through the window: a daemon is scraped from its start,
// so what it keeps for its scrapes (and the garbage they leave) is part
// of its steady state, not a burst at the window's start. The requests
// are counted in the format opts.Accept asks for while the window lasts,
// so the daemon keeps no other format's encoding while measured, and in
// the text format once it is measured, whose size the result reports.
func measureCounting(ctx context.Context, out *CostResult, count func(accept string) (float64, int, error), opts CostOptions) error {
	scrape := func() error {
		_, _, err := count(opts.Accept)
		return err
	}
	if err := scrapeFor(ctx, opts.Warmup, opts.ScrapeEvery, scrape); err != nil {
		return err
	}
	before, err := proc.Read(out.DaemonPID)
	if err != nil {
		return err
	}
	reqBefore, _, err := count(opts.Accept)
	if err != nil {
		return err
	}
	start := time.Now()
	out.Start = start
	if err := scrapeFor(ctx, opts.Duration, opts.ScrapeEvery, scrape); err != nil {
		return err
	}
	after, err := proc.Read(out.DaemonPID)
	if err != nil {
		return err
	}
	out.Duration = time.Since(start)
	reqAfter, size, err := count("")
	if err != nil {
		return err
	}
	out.ScrapeBytes = size
	out.Requests = reqAfter - reqBefore
	out.CPU, out.CPUTicks = after.CPU-before.CPU, after.Ticks-before.Ticks
	out.Voluntary, out.Involuntary = after.Voluntary-before.Voluntary, after.Involuntary-before.Involuntary
	out.RSS, out.PeakRSS = after.RSS, after.PeakRSS
	out.CorePercent = 100 * out.CPU.Seconds() / out.Duration.Seconds()
	if out.Requests > 0 {
		out.CPUPerRequest = time.Duration(float64(out.CPU) / out.Requests)
	}
	return nil
}

// scrapeFor waits d, calling scrape every `every` meanwhile (never when
// every is 0).
func scrapeFor(ctx context.Context, d, every time.Duration, scrape func() error) error {
	start := time.Now()
	for {
		step := d - time.Since(start)
		if step <= 0 {
			return nil
		}
		if every > 0 {
			step = min(step, every)
		}
		if err := wait.Sleep(ctx, step); err != nil {
			return err
		}
		if every > 0 && time.Since(start) < d {
			if err := scrape(); err != nil {
				return err
			}
		}
	}
}

// costConfig is the daemon's configuration: every probe streams
// o.OutputTokens tokens with continuous usage and runs the quality checks,
// so a request costs what a typical probe costs or more.
func costConfig(url, ledger string, o CostOptions) string {
	var b strings.Builder
	fmt.Fprintf(&b, "global:\n  ledger: {path: %q}\ntargets:\n", ledger)
	for i := range o.Targets {
		fmt.Fprintf(&b, "  - name: sim-%02d\n    url: %s\n    model: sim-llama\n", i, url)
	}
	writeProbes(&b, o.Probes, o.Rate, o.OutputTokens)
	return b.String()
}

// daemonConfigFile is the name of the daemon's configuration in its
// directory.
const daemonConfigFile = "prober.yml"

// startDaemon writes cfg to dir and runs the daemon on it, with flags
// added to its command line.
func startDaemon(ctx context.Context, binary, dir, cfg string, flags ...string) (*proc.Process, error) {
	return startDaemonEnv(ctx, binary, dir, cfg, nil, flags...)
}

// startDaemonEnv is startDaemon with env added to the daemon's
// environment.
func startDaemonEnv(ctx context.Context, binary, dir, cfg string, env []string, flags ...string) (*proc.Process, error) {
	cfgPath := filepath.Join(dir, daemonConfigFile)
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		return nil, fmt.Errorf("write config: %w", err)
	}
	args := append([]string{"run", "--config.file=" + cfgPath, "--web.listen-address=127.0.0.1:0"}, flags...)
	cmd := exec.CommandContext(ctx, binary, args...)
	if len(env) > 0 {
		cmd.Env = append(os.Environ(), env...)
	}
	d, err := proc.StartCommand(cmd, proc.DaemonReady)
	if err != nil {
		return nil, fmt.Errorf("daemon: %w", err)
	}
	return d, nil
}

// writeProbes writes the config's probes section: n probes at rate, whose
// random workloads stream outputTokens tokens.
func writeProbes(b *strings.Builder, n int, rate float64, outputTokens int) {
	b.WriteString("probes:\n")
	random := fmt.Sprintf("workload: {random: {input_tokens: 128, output_tokens: %d}}\n    request: {ignore_eos: true}", outputTokens)
	kinds := []string{
		"api: chat\n    " + random,
		"api: completions\n    " + random,
		"api: chat\n    workload: {prompts: [{messages: [{role: user, content: \"What is 12*12? Digits only.\"}], expect: {regex: '\\b144\\b'}}]}",
	}
	for i := range n {
		fmt.Fprintf(b, "  - name: probe-%d\n    rate: %g\n    %s\n    slo: {ttft: 1s, tpot: 100ms, e2el: 10s}\n", i, rate, kinds[i%len(kinds)])
	}
}

// The counters of finished requests: the daemon's, and the simulator's
// (the naive client has no metrics of its own).
const (
	probeRequests     = "vllm_probe_requests_total"
	simulatorRequests = "vllm:request_success_total"
)

// requestsTotal scrapes url, asking as accept says ("": the text format),
// and returns the sum of counter's series and the size of the answer.
func requestsTotal(url, counter, accept string) (float64, int, error) {
	body, ctype, _, err := fetch(url, accept)
	if err != nil {
		return 0, 0, fmt.Errorf("scrape: %w", err)
	}
	dec := expfmt.NewDecoder(bytes.NewReader(body), expfmt.Format(ctype))
	total := 0.0
	for {
		var mf dto.MetricFamily
		if err := dec.Decode(&mf); errors.Is(err, io.EOF) {
			return total, len(body), nil
		} else if err != nil {
			return 0, 0, fmt.Errorf("parse scrape (%s): %w", ctype, err)
		}
		if mf.GetName() != counter {
			continue
		}
		for _, m := range mf.GetMetric() {
			total += m.GetCounter().GetValue()
		}
	}
}
