package bench

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/vllm-prober/vllm-prober/bench/openloop"
	"github.com/vllm-prober/vllm-prober/bench/report"
	"github.com/vllm-prober/vllm-prober/bench/stats"
	"github.com/vllm-prober/vllm-prober/internal/quantile"
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

// shardOf is one worker's result as merge reads it.
type shardOf struct {
	path  string
	file  *shardFile
	shard openloop.Shard
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
	if len(o.Results) > 0 && isCapacityShard(o.Results[0]) {
		c, err := mergeCapacity(ctx, o, env)
		out := &Outcome{}
		if c != nil {
			out.ResultPath = c.JSONPath
		}
		return out, err
	}
	shards, err := readShards(o.Results)
	if err != nil {
		return nil, err
	}
	first := shards[0].file
	s, err := first.Settings.settings()
	if err != nil {
		return nil, fmt.Errorf("%w: %s: shard.settings: %w", ErrUsage, shards[0].path, err)
	}
	parts := make([]shardPart, len(shards))
	for i, sh := range shards {
		parts[i] = sh.file.shardPart
	}
	run := mergeRun(parts)
	m := stats.Compute(run, stats.Options{Good: s.Goodput.Rule(), Percentiles: s.Percentiles})
	missing := missingShards(first.shardCount(), shardsOf(shards))
	fmt.Fprintf(env.Stdout, "Merged %d of %d shards of run %s (start %s)\n", len(shards), first.shardCount(), first.RunID,
		first.StartAt.UTC().Format(time.RFC3339Nano))
	skew := make([]shardSkew, len(shards))
	for i, sh := range shards {
		skew[i] = shardSkew{shard: sh.file.Shard, path: sh.path, requests: sh.file.Requests}
	}
	printSkew(env.Stdout, skew)
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
			return nil // readShards names a result still absent
		}
		if !logged {
			env.Logger.Info("waiting for results", "absent", len(absent), "first", absent[0], "wait", o.Wait)
		}
		if err := wait.Sleep(ctx, time.Second); err != nil {
			return fmt.Errorf("waiting for %s: %w", absent[0], err)
		}
	}
}

// readShards reads the workers' results and checks they are shards of one
// run, each given once.
func readShards(paths []string) ([]shardOf, error) {
	if len(paths) == 0 {
		return nil, usageErr("no results to merge")
	}
	var out []shardOf
	var ids []shardID
	for _, p := range paths {
		f, err := readShardFile(p)
		if err != nil {
			return nil, err
		}
		id, err := checkShard(ids, shardID{path: p, runID: f.RunID, shard: f.Shard}, "shard.shard")
		if err != nil {
			return nil, err
		}
		ids = append(ids, id)
		out = append(out, shardOf{path: p, file: f, shard: id.parsed})
	}
	return out, nil
}

// shardID is how a saved shard result names its run and its part.
type shardID struct {
	path, runID, shard string // shard as I/N
	parsed             openloop.Shard
}

// checkShard parses id's shard (field names it for the error) and checks
// it joins the shards read before it: the same run, the same shard
// count, not one of them.
func checkShard(prev []shardID, id shardID, field string) (shardID, error) {
	sh, err := parseShard(id.shard)
	if err != nil {
		return id, fmt.Errorf("%s: %s: %w", id.path, field, err)
	}
	id.parsed = sh
	if len(prev) == 0 {
		return id, nil
	}
	if first := prev[0]; id.runID != first.runID {
		return id, usageErr("%s is of run %s, %s of run %s: refusing to merge shards of different runs",
			id.path, id.runID, first.path, first.runID)
	} else if sh.Count != first.parsed.Count {
		return id, usageErr("%s is shard %s, %s is shard %s: the shard counts differ", id.path, id.shard, first.path, first.shard)
	}
	for _, o := range prev {
		if o.parsed == sh {
			return id, usageErr("%s and %s are both shard %s of run %s", o.path, id.path, id.shard, id.runID)
		}
	}
	return id, nil
}

// readShardFile reads the "shard" block of a worker's result.
func readShardFile(path string) (*shardFile, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUsage, err)
	}
	var doc struct {
		Shard *shardFile `json:"shard"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, usageErr("%s: %v", path, err)
	}
	if doc.Shard == nil || doc.Shard.RunID == "" {
		return nil, usageErr("%s: not a sharded bench result (no \"shard\" block with a run_id; run bench with --shard I/N)", path)
	}
	for i, r := range doc.Shard.Requests {
		if r.Result == nil {
			return nil, usageErr("%s: shard.requests[%d] has no result", path, i)
		}
	}
	return doc.Shard, nil
}

// shardCount is N of the file's I/N.
func (f *shardFile) shardCount() int {
	s, _ := parseShard(f.Shard) // checked by readShards
	return s.Count
}

// mergeRun joins the workers' parts of one run into one Run in planned
// order, as one process running the whole schedule would have recorded it.
func mergeRun(parts []shardPart) *openloop.Run {
	run := &openloop.Run{Start: parts[0].Start, Span: parts[0].SpanNS, Timeout: parts[0].TimeoutNS}
	var reqs []shardRequest
	for _, p := range parts {
		reqs = append(reqs, p.Requests...)
		if p.End.After(run.End) {
			run.End = p.End
		}
		if p.Interrupted && p.Stopped.After(run.Stopped) {
			run.Interrupted, run.Stopped = true, p.Stopped
		}
	}
	slices.SortFunc(reqs, func(a, b shardRequest) int { return cmp.Compare(a.Result.Seq, b.Result.Seq) })
	for _, r := range reqs {
		run.Results, run.Ended, run.Queued = append(run.Results, r.Result), append(run.Ended, r.Ended), append(run.Queued, r.QueuedNS)
	}
	return run
}

// missingShards names the shards of n not given, as I/N.
func missingShards(n int, given []openloop.Shard) []string {
	var missing []string
	for i := range n {
		if !slices.ContainsFunc(given, func(s openloop.Shard) bool { return s.Index == i }) {
			missing = append(missing, shardString(openloop.Shard{Index: i, Count: n}))
		}
	}
	return missing
}

// shardsOf lists the shards given.
func shardsOf(shards []shardOf) []openloop.Shard {
	out := make([]openloop.Shard, len(shards))
	for i, sh := range shards {
		out[i] = sh.shard
	}
	return out
}

// shardSkew is what printSkew reports of one worker: its shard (I/N),
// its result and the requests it offered.
type shardSkew struct {
	shard, path string
	requests    []shardRequest
}

// printSkew prints each worker's send lag (send time minus planned time,
// on its own clock) and the spread of their medians: the send-time skew
// between workers the results show. An offset between the machines'
// clocks is invisible to their own timestamps; only synchronised clocks
// (NTP) rule it out.
func printSkew(w io.Writer, shards []shardSkew) {
	var medians []float64
	for _, sh := range shards {
		var lags []float64
		for _, r := range sh.requests {
			if !r.Result.Sent.IsZero() {
				lags = append(lags, stats.Milliseconds(r.Result.Lag))
			}
		}
		slices.Sort(lags)
		p50, p99 := quantile.NearestRank(lags, 0.5), quantile.NearestRank(lags, 0.99)
		if len(lags) > 0 {
			medians = append(medians, p50)
		}
		fmt.Fprintf(w, "Shard %s (%s): %d requests, %d sent, send lag p50 %.3f ms, p99 %.3f ms\n",
			sh.shard, sh.path, len(sh.requests), len(lags), p50, p99)
	}
	if len(medians) > 1 {
		fmt.Fprintf(w, "Send-time skew between workers (spread of median send lag): %.3f ms\n", slices.Max(medians)-slices.Min(medians))
	}
	fmt.Fprintln(w, "Clock offset between machines is not visible in their own timestamps: keep the workers' clocks synchronised (NTP).")
}
