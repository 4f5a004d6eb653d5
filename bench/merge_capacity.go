package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/vllm-prober/vllm-prober/bench/capacity"
	"github.com/vllm-prober/vllm-prober/bench/openloop"
	"github.com/vllm-prober/vllm-prober/bench/stats"
)

// capacityShardDoc is a capacity worker's shard result as a file.
type capacityShardDoc struct {
	Shard *capacityShardFile `json:"capacity_shard"`
}

// isCapacityShard reports whether path holds a capacity worker's shard
// result (else it is taken for a bench result).
func isCapacityShard(path string) bool {
	b, err := os.ReadFile(path)
	if err != nil {
		return false
	}
	var doc map[string]json.RawMessage
	if json.Unmarshal(b, &doc) != nil {
		return false
	}
	_, ok := doc["capacity_shard"]
	return ok
}

// readCapacityShardFile reads a capacity worker's shard result.
func readCapacityShardFile(path string) (*capacityShardFile, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUsage, err)
	}
	var doc capacityShardDoc
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, usageErr("%s: %v", path, err)
	}
	f := doc.Shard
	if f == nil || f.RunID == "" {
		return nil, usageErr("%s: not a sharded capacity result (no \"capacity_shard\" block with a run_id; run capacity with --shard I/N)", path)
	}
	if f.Header.Burstiness, err = strconv.ParseFloat(f.Burstiness, 64); err != nil {
		return nil, usageErr("%s: capacity_shard.burstiness %q: %v", path, f.Burstiness, err)
	}
	for i, run := range f.Runs {
		for j, r := range run.Requests {
			if r.Result == nil {
				return nil, usageErr("%s: capacity_shard.runs[%d].requests[%d] has no result", path, i, j)
			}
		}
	}
	return f, nil
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
	var files []*capacityShardFile
	var ids []shardID
	for _, p := range o.Results {
		f, err := readCapacityShardFile(p)
		if err != nil {
			return nil, err
		}
		id, err := checkShard(ids, shardID{path: p, runID: f.RunID, shard: f.Shard}, "capacity_shard.shard")
		if err != nil {
			return nil, err
		}
		files, ids = append(files, f), append(ids, id)
	}
	first := files[0]
	given := make([]openloop.Shard, len(ids))
	skew := make([]shardSkew, len(ids))
	parts := map[runKey][]shardPart{}
	for i, f := range files {
		given[i] = ids[i].parsed
		skew[i] = shardSkew{shard: f.Shard, path: ids[i].path}
		for _, run := range f.Runs {
			k := runKey{run.Rate, run.Repeat}
			parts[k] = append(parts[k], run.shardPart)
			skew[i].requests = append(skew[i].requests, run.Requests...)
		}
	}
	count := ids[0].parsed.Count
	missing := missingShards(count, given)
	capacity.PrintHeader(env.Stdout, first.Header)
	fmt.Fprintf(env.Stdout, "Merged %d of %d shards of capacity search %s (start %s)\n", len(files), count, first.RunID,
		first.StartAt.UTC().Format(time.RFC3339Nano))
	printSkew(env.Stdout, skew)
	level := func(_ context.Context, rate float64, repeat int) (stats.Metrics, error) {
		p := parts[runKey{rate, repeat}]
		if len(p) < len(files) {
			return stats.Metrics{}, fmt.Errorf("%d of the %d shard results given have no such run: their workers stopped before it",
				len(files)-len(p), len(files))
		}
		return stats.Compute(mergeRun(p), stats.Options{Percentiles: first.Percentiles}), nil
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
