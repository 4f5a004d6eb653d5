// Package bench runs one-shot benchmarks (`vllm-prober bench`, a Go
// counterpart of `vllm bench serve`), capacity searches
// (`vllm-prober capacity`) and the merge of sharded ones
// (`vllm-prober merge`) on top of the probe package: the same judge,
// dispositions and ledger as the daemon, vLLM's arrival process, and vLLM's
// printed result block and saved JSON so numbers compare line by line.
//
// bench holds the commands: their flags, the server setup and ready check,
// the requests' sender and IDs, and the order in which a run sends,
// computes, prints and saves. Its subpackages hold the parts with a job of
// their own: bench/openloop sends planned requests open loop, bench/stats
// computes what a run measured, bench/report prints and saves it in
// vLLM's form, bench/dataset reads --dataset-path, bench/shard is what
// sharded workers save and how merge joins it, bench/capacity is the
// staircase search and its report, bench/plot draws the SVG reports, and
// bench/pyfmt prints numbers as Python does.
package bench

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/vllm-prober/vllm-prober/bench/dataset"
	"github.com/vllm-prober/vllm-prober/bench/openloop"
	"github.com/vllm-prober/vllm-prober/bench/plot"
	"github.com/vllm-prober/vllm-prober/bench/pyfmt"
	"github.com/vllm-prober/vllm-prober/bench/report"
	"github.com/vllm-prober/vllm-prober/bench/shard"
	"github.com/vllm-prober/vllm-prober/bench/stats"
	"github.com/vllm-prober/vllm-prober/config"
	"github.com/vllm-prober/vllm-prober/internal/wait"
	"github.com/vllm-prober/vllm-prober/probe"
	"github.com/vllm-prober/vllm-prober/probe/ledger"
	"github.com/vllm-prober/vllm-prober/probe/schedule"
)

// benchProbeName is the probe name bench runs write into results and the ledger.
const benchProbeName = "bench"

// Env is where a command writes and what clock it reads.
type Env struct {
	Stdout   io.Writer
	Progress io.Writer // the progress bar's terminal, usually os.Stderr
	Logger   *slog.Logger
	// Now is the clock; nil = time.Now, on which the requests' response
	// bytes are stamped with their kernel receive times (client.Options).
	Now func() time.Time
	// realClock: Now was nil, and defaults made it time.Now.
	realClock bool
}

func (e *Env) defaults() {
	if e.Stdout == nil {
		e.Stdout = io.Discard
	}
	if e.Logger == nil {
		e.Logger = slog.New(slog.DiscardHandler)
	}
	if e.Now == nil {
		e.Now, e.realClock = time.Now, true
	}
}

// Outcome is a finished bench run.
type Outcome struct {
	Settings   report.Settings
	Metrics    stats.Metrics
	Run        *openloop.Run
	ResultPath string // "" when not saved
}

// Bench runs vllm bench serve's benchmark: it finds the model, runs the
// ready check (skipped by default, as in vLLM), the warm-ups, then the
// planned requests, and prints vLLM's result block followed by the ledger
// summary. Flag errors wrap ErrUsage.
func Bench(ctx context.Context, o Options, env Env) (*Outcome, error) {
	env.defaults()
	if err := o.validate(); err != nil {
		return nil, err
	}
	prompts, err := benchPrompts(&o)
	if err != nil {
		return nil, err
	}
	req, err := prepare(ctx, &o, prompts, env)
	if err != nil {
		return nil, err
	}
	defer req.Close()
	s := report.Settings{Backend: o.Backend, Label: o.Label, Model: o.Model, NumPrompts: o.NumPrompts,
		RequestRate: o.RequestRate, Burstiness: o.Burstiness, MaxConcurrency: o.MaxConcurrency,
		Goodput: o.Goodput, PercentileMetrics: o.PercentileMetrics, Percentiles: o.MetricPercentiles}
	started := env.Now()
	resultPath := ""
	if o.SaveResult {
		resultPath = resultFile(&o, s, started)
		if o.LedgerPath == "" {
			o.LedgerPath = strings.TrimSuffix(resultPath, ".json") + ".ledger.jsonl"
		}
	}
	s.LedgerPath = o.LedgerPath
	lg, err := ledger.Open(config.Ledger{Path: o.LedgerPath, RecordText: config.RecordTextFailures}, env.Logger)
	if err != nil {
		return nil, err // ledger.Open names the ledger
	}
	run, err := runPlanned(ctx, &o, req, lg, env)
	if err != nil {
		_ = lg.Close()
		return nil, err
	}
	if err := lg.Close(); err != nil {
		env.Logger.Warn("ledger incomplete", "path", o.LedgerPath, "err", err)
	}
	m := stats.Compute(run, stats.Options{Good: o.Goodput.Rule(), Percentiles: o.MetricPercentiles})
	report.PrintFailures(env.Stdout, run)
	report.PrintResult(env.Stdout, s, m)
	report.PrintLedger(env.Stdout, s, m)
	out := &Outcome{Settings: s, Metrics: m, Run: run}
	if o.SaveResult {
		var extra map[string]any
		if o.sharded() {
			extra = map[string]any{"shard": shard.NewFile(runID(&o), o.Shard, s, run)}
		}
		b, err := report.Marshal(s, m, run, o.SaveDetailed, started, extra)
		if err == nil {
			err = report.WriteFile(resultPath, report.Bytes(b))
		}
		if err != nil {
			return out, fmt.Errorf("save result: %w", err)
		}
		out.ResultPath = resultPath
	}
	if o.Plot != "" {
		title := fmt.Sprintf("%s %s at %s req/s", o.Backend, s.Model, pyfmt.Float(o.RequestRate, 2))
		if err := report.WriteFile(o.Plot, func(w io.Writer) error { return plot.Run(w, run, title) }); err != nil {
			return out, fmt.Errorf("--plot %s: %w", o.Plot, err)
		}
	}
	return out, nil
}

// benchPrompts loads the dataset file; the random dataset is the probe
// package's random workload (nil prompts) and forces ignore_eos, as vLLM
// does for openai-compatible backends.
func benchPrompts(o *Options) ([]dataset.Prompt, error) {
	if o.DatasetName == datasetRandom {
		o.IgnoreEOS = true
		return nil, nil
	}
	p, err := dataset.Load(o.DatasetPath, o.NumPrompts, o.RandomOutputLen, o.Seed)
	if err != nil {
		return nil, fmt.Errorf("%w: --dataset-path: %w", ErrUsage, err)
	}
	return p, nil
}

// resultFile is where --save-result writes.
func resultFile(o *Options, s report.Settings, at time.Time) string {
	name := o.ResultFilename
	if name == "" {
		name = report.Filename(s, at)
		if o.sharded() {
			name = strings.TrimSuffix(name, ".json") + fmt.Sprintf("-shard%dof%d.json", o.Shard.Index, o.Shard.Count)
		}
	}
	return filepath.Join(o.ResultDir, name)
}

// prepare finds the model and runs vllm bench serve's ready check, so a
// server that is down gives one clear error. It returns the Requester of
// the run.
func prepare(ctx context.Context, o *Options, prompts []dataset.Prompt, env Env) (*idSender, error) {
	// Every failure of this requester is returned as the error, so its
	// own log lines (a failed model discovery) would say it twice.
	quiet := env
	quiet.Logger = slog.New(slog.DiscardHandler)
	ready, err := newRequester(o, prompts, quiet)
	if err != nil {
		return nil, err
	}
	defer ready.Close()
	if o.ReadyCheckTimeout <= 0 {
		if err := discoverModel(ctx, o, ready); err != nil {
			return nil, fmt.Errorf("server %s not ready: %w", o.BaseURL, err)
		}
	}
	err = readyCheck(ctx, env, o.BaseURL, o.ReadyCheckTimeout, func(ctx context.Context) (*probe.Result, error) {
		if err := discoverModel(ctx, o, ready); err != nil {
			return nil, err
		}
		res := &probe.Result{Seq: 1, RequestID: requestIDPrefix() + "test"}
		ready.Do(ctx, res)
		return res, nil
	})
	if err != nil {
		return nil, err
	}
	// A fresh Requester, so the run's random prompts do not depend on
	// how many tries the ready check took.
	return newRequester(o, prompts, env)
}

// readyCheck is vllm bench serve's ready check. With timeout 0 it is
// skipped and says so; else it sends the initial test request (try) until
// its stream completes, once a second for up to timeout. A 4xx answer
// other than 429 (a prompt over the model's context, a bad key) is final:
// the error says the server refused the request and gives its message. A
// server that never answered is "not ready"; one that answered with
// another failure is named with it.
func readyCheck(ctx context.Context, env Env, url string, timeout time.Duration, try func(context.Context) (*probe.Result, error)) error {
	fmt.Fprintln(env.Stdout, "Starting initial single prompt test run...")
	if timeout <= 0 {
		fmt.Fprintln(env.Stdout, "Skipping endpoint ready check.")
		return nil
	}
	fmt.Fprintf(env.Stdout, "Waiting for endpoint to become up in %d seconds\n", int(timeout.Seconds()))
	deadline := env.Now().Add(timeout)
	for attempt := 0; ; attempt++ {
		res, err := try(ctx)
		switch {
		case err == nil && stats.Completed(res):
			fmt.Fprintln(env.Stdout, "Initial test run completed.")
			return nil
		case err == nil && res.Reason == probe.ReasonHTTP4xx:
			return fmt.Errorf("server %s refused the initial test request: %s", url, res.Error)
		case err == nil:
			err = fmt.Errorf("%s %s: %s", res.Disposition, res.Reason, res.Error)
			if res.HTTPStatus != 0 {
				err = fmt.Errorf("initial test request to %s failed: %w", url, err)
			}
		}
		if res == nil || res.HTTPStatus == 0 {
			err = fmt.Errorf("server %s not ready: %w", url, err)
		}
		if ctx.Err() != nil || !env.Now().Before(deadline) {
			return err
		}
		if attempt == 0 {
			env.Logger.Info("waiting for the server", "url", url, "timeout", timeout, "err", err)
		}
		if wait.Sleep(ctx, time.Second) != nil {
			return err
		}
	}
}

// runPlanned sends the warm-ups, then the planned requests (this worker's
// shard of them) with a progress bar. A --start-at already past is an
// error: the requests planned before now would all leave at once.
func runPlanned(ctx context.Context, o *Options, sender schedule.Sender, lg *ledger.Ledger, env Env) (*openloop.Run, error) {
	if o.NumWarmups > 0 {
		fmt.Fprintf(env.Stdout, "Warming up with %d requests...\n", o.NumWarmups)
		openloop.Execute(ctx, openloop.Options{Target: "warmup", Probe: benchProbeName, Offsets: make([]time.Duration, o.NumWarmups),
			Sender: sender, MaxConcurrency: o.MaxConcurrency, Now: env.Now})
		fmt.Fprintln(env.Stdout, "Warmup run completed.")
	}
	if now := env.Now(); !o.StartAt.IsZero() && now.After(o.StartAt) {
		return nil, usageErr("--start-at %s is %v in the past: start the workers earlier or choose a later time",
			o.StartAt.Format(time.RFC3339Nano), now.Sub(o.StartAt).Round(time.Millisecond))
	}
	fmt.Fprintln(env.Stdout, "Starting main benchmark run...")
	printPreamble(env.Stdout, o)
	mine := o.NumPrompts
	if o.sharded() {
		mine = (o.NumPrompts - o.Shard.Index + o.Shard.Count - 1) / o.Shard.Count
		fmt.Fprintf(env.Stdout, "Shard %s: %d of %d requests, schedule from %s\n", shard.String(o.Shard), mine, o.NumPrompts,
			o.StartAt.UTC().Format(time.RFC3339Nano))
	}
	bar := newProgress(env.Progress, mine, "bench")
	defer bar.Finish()
	var mu sync.Mutex
	return openloop.Execute(ctx, openloop.Options{
		Target: hostOf(o.BaseURL), Probe: benchProbeName,
		Offsets:        openloop.Schedule(o.NumPrompts, o.RequestRate, o.Burstiness, o.Seed),
		Start:          o.StartAt,
		Shard:          o.Shard,
		Sender:         sender,
		MaxConcurrency: o.MaxConcurrency,
		Timeout:        o.Timeout,
		Ledger:         lg,
		Now:            env.Now,
		OnFinish: func(*probe.Result) {
			mu.Lock()
			defer mu.Unlock()
			bar.Add(1)
		},
	}), nil
}

// hostOf names the target in results: the base URL's host.
func hostOf(base string) string {
	if u, err := url.Parse(base); err == nil && u.Host != "" {
		return u.Host
	}
	return base
}

// printPreamble prints the settings vLLM prints before its run.
func printPreamble(w io.Writer, o *Options) {
	fmt.Fprintf(w, "Traffic request rate: %s\n", pyfmt.Rate(o.RequestRate))
	kind := "Gamma distribution"
	if o.Burstiness == 1 {
		kind = "Poisson process"
	}
	fmt.Fprintf(w, "Burstiness factor: %s (%s)\n", pyfmt.Rate(o.Burstiness), kind)
	conc := "None"
	if o.MaxConcurrency > 0 {
		conc = fmt.Sprint(o.MaxConcurrency)
	}
	fmt.Fprintf(w, "Maximum request concurrency: %s\n", conc)
}
