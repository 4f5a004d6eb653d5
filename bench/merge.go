package bench

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"time"

	"github.com/vllm-prober/vllm-prober/bench/capacity"
	"github.com/vllm-prober/vllm-prober/bench/report"
	"github.com/vllm-prober/vllm-prober/bench/shard"
	"github.com/vllm-prober/vllm-prober/bench/stats"
	"github.com/vllm-prober/vllm-prober/internal/wait"
)

// ErrMissingShards is returned by Merge, after it printed the merge of the
// shards it had, when some shards of the run were not given.
var ErrMissingShards = errors.New("missing shards")

// MergeOptions configures `vllm-prober merge`.
type MergeOptions struct {
	Results []string // the workers' saved results
	Output  string   // the merged result's JSON; "" = none
	// Wait is how long to wait for every result to exist (a merge step
	// started beside its workers); 0 = they must exist already.
	Wait time.Duration
}

// Merge recomputes a sharded run's numbers from its workers' saved
// results (a sharded capacity search's: mergeCapacity): it joins every worker's requests into the run's one schedule
// and computes vLLM's block and the prober's from them, as one process
// would have, never from the workers' own percentiles. It refuses results
// of different runs or the same shard twice, reports the shards missing,
// and each worker's send lag, so the user can judge the merge.
func Merge(ctx context.Context, o MergeOptions, env Env) (*Outcome, error) {
	env.defaults()
	if err := awaitResults(ctx, o, env); err != nil {
		return nil, err
	}
	if len(o.Results) > 0 && shard.IsCapacity(o.Results[0]) {
		c, err := mergeCapacity(ctx, o, env)
		out := &Outcome{}
		if c != nil {
			out.ResultPath = c.JSONPath
		}
		return out, err
	}
	shards, err := shard.ReadResults(o.Results)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUsage, err)
	}
	first, count := shards[0].File, shards[0].Shard.Count
	s, err := first.Settings.Report()
	if err != nil {
		return nil, fmt.Errorf("%w: %s: shard.settings: %w", ErrUsage, shards[0].Path, err)
	}
	parts := make([]shard.Part, len(shards))
	skew := make([]shard.Skew, len(shards))
	for i, sh := range shards {
		parts[i] = sh.File.Part
		skew[i] = shard.Skew{Shard: sh.File.Shard, Path: sh.Path, Requests: sh.File.Requests}
	}
	run := shard.Join(parts)
	m := stats.Compute(run, stats.Options{Good: s.Goodput.Rule(), Percentiles: s.Percentiles})
	missing := shard.Missing(shards)
	fmt.Fprintf(env.Stdout, "Merged %d of %d shards of run %s (start %s)\n", len(shards), count, first.RunID,
		first.StartAt.UTC().Format(time.RFC3339Nano))
	shard.PrintSkew(env.Stdout, skew)
	report.PrintFailures(env.Stdout, run)
	report.PrintResult(env.Stdout, s, m)
	report.PrintLedger(env.Stdout, s, m)
	out := &Outcome{Settings: s, Metrics: m, Run: run}
	if o.Output != "" {
		info := map[string]any{"run_id": first.RunID, "results": o.Results, "missing_shards": missing}
		b, err := report.Marshal(s, m, run, false, first.StartAt, map[string]any{"merge": info})
		if err == nil {
			err = report.WriteFile(o.Output, report.Bytes(b))
		}
		if err != nil {
			return out, fmt.Errorf("--output %s: %w", o.Output, err)
		}
		out.ResultPath = o.Output
	}
	if len(missing) > 0 {
		return out, fmt.Errorf("%w %s of run %s: the merge above has %d of %d requests",
			ErrMissingShards, strings.Join(missing, ", "), first.RunID, len(run.Results), s.NumPrompts)
	}
	return out, nil
}

// awaitResults waits up to o.Wait until every result exists. Workers write
// their results whole (a rename), so one that exists is complete.
func awaitResults(ctx context.Context, o MergeOptions, env Env) error {
	deadline := env.Now().Add(o.Wait)
	for logged := false; ; logged = true {
		var absent []string
		for _, p := range o.Results {
			if _, err := os.Stat(p); errors.Is(err, fs.ErrNotExist) {
				absent = append(absent, p)
			}
		}
		if len(absent) == 0 || !env.Now().Before(deadline) {
			return nil // shard.ReadResults names a result still absent
		}
		if !logged {
			env.Logger.Info("waiting for results", "absent", len(absent), "first", absent[0], "wait", o.Wait)
		}
		if err := wait.Sleep(ctx, time.Second); err != nil {
			return fmt.Errorf("waiting for %s: %w", absent[0], err)
		}
	}
}

// runKey names one repeat of one level.
type runKey struct {
	rate   float64
	repeat int // from 0
}

// mergeCapacity recomputes a sharded capacity search from its workers'
// shard results: every run's metrics from the union of the workers'
// requests in it, then the pass rule on each, the verdict, the table, the
// JSON report and the chart, as one process running the same fixed
// staircase computes them; never from the workers' own percentiles.
// o.Output names the JSON report; the chart goes beside it (.svg).
func mergeCapacity(ctx context.Context, o MergeOptions, env Env) (*CapacityOutcome, error) {
	shards, err := shard.ReadCapacityResults(o.Results)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUsage, err)
	}
	first, count := shards[0].File, shards[0].Shard.Count
	skew := make([]shard.Skew, len(shards))
	parts := map[runKey][]shard.Part{}
	for i, sh := range shards {
		skew[i] = shard.Skew{Shard: sh.File.Shard, Path: sh.Path}
		for _, run := range sh.File.Runs {
			k := runKey{run.Rate, run.Repeat}
			parts[k] = append(parts[k], run.Part)
			skew[i].Requests = append(skew[i].Requests, run.Requests...)
		}
	}
	missing := shard.Missing(shards)
	capacity.PrintHeader(env.Stdout, first.Header)
	fmt.Fprintf(env.Stdout, "Merged %d of %d shards of capacity search %s (start %s)\n", len(shards), count, first.RunID,
		first.StartAt.UTC().Format(time.RFC3339Nano))
	shard.PrintSkew(env.Stdout, skew)
	level := func(_ context.Context, rate float64, repeat int) (stats.Metrics, error) {
		p := parts[runKey{rate, repeat}]
		if len(p) < len(shards) {
			return stats.Metrics{}, fmt.Errorf("%d of the %d shard results given have no such run: their workers stopped before it",
				len(shards)-len(p), len(shards))
		}
		return stats.Compute(shard.Join(p), stats.Options{Percentiles: first.Percentiles}), nil
	}
	search, err := capacity.Run(ctx, capacity.Options{Rates: first.Rates, Repeats: first.Repeats, Resolution: first.Resolution,
		Rule: first.Rule, Order: first.Order, Seed: first.Seed, Fixed: true}, level)
	out := &CapacityOutcome{Search: search}
	if search != nil && len(search.Repeats) > 0 {
		capacity.PrintTable(env.Stdout, search, first.Rule)
		capacity.PrintVerdict(env.Stdout, search)
		if o.Output != "" {
			out.JSONPath, out.SVGPath = o.Output, strings.TrimSuffix(o.Output, ".json")+".svg"
			if werr := writeCapacityFiles(out, first.Settings, first.Rule, first.Header); werr != nil {
				return out, fmt.Errorf("--output %s: %w", o.Output, werr)
			}
			fmt.Fprintf(env.Stdout, "Report: %s\nChart: %s\n", out.JSONPath, out.SVGPath)
		}
	}
	if err != nil {
		return out, err
	}
	if len(missing) > 0 {
		return out, fmt.Errorf("%w %s of capacity search %s: each run above has only the other shards' requests",
			ErrMissingShards, strings.Join(missing, ", "), first.RunID)
	}
	return out, nil
}
