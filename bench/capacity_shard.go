package bench

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"time"

	"github.com/vllm-prober/vllm-prober/bench/capacity"
	"github.com/vllm-prober/vllm-prober/bench/shard"
)

// capacityRunID identifies a sharded capacity search: the bench run id of
// its workload (the start, the shard count, the dataset, the server) and
// everything that makes the staircase: the rates, repeats, order, seed,
// durations, arrival process, pass rule and probe.
func capacityRunID(o *CapacityOptions) string {
	h := sha256.New()
	rule, _ := json.Marshal(o.Rule)
	fmt.Fprintf(h, "%s|%v|%d|%s|%d|%v|%v|%v|%v|%s|%s|%s|%s|%v", runID(&o.Workload), o.Rates, o.Repeats, o.Order, o.Seed,
		o.Warmup, o.Duration, o.Drain, o.Burstiness, rule, o.ProbeName, o.TargetName, o.Workload.StartAt.UTC(), o.Resolution)
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// fixedStaircase prints how a search from --start-at runs and, for a
// sharded worker, returns the shard result it fills (nil otherwise).
func fixedStaircase(w io.Writer, o *CapacityOptions, h capacity.Header) *shard.CapacityFile {
	wo := &o.Workload
	if wo.StartAt.IsZero() {
		return nil
	}
	fmt.Fprintf(w, "Fixed staircase from %s: %d levels x %d repeats, each run at its computed start, no bisection\n",
		wo.StartAt.UTC().Format(time.RFC3339Nano), len(o.Rates), o.Repeats)
	if !wo.sharded() {
		return nil
	}
	fmt.Fprintf(w, "Shard %s: every run's requests whose index is %d modulo %d\n", shard.String(wo.Shard), wo.Shard.Index, wo.Shard.Count)
	burstiness := strconv.FormatFloat(h.Burstiness, 'g', -1, 64)
	h.Burstiness = 0
	return &shard.CapacityFile{RunID: capacityRunID(o), Shard: shard.String(wo.Shard), StartAt: wo.StartAt, Header: h,
		Burstiness: burstiness, Rule: o.Rule,
		Rates: o.Rates, Repeats: o.Repeats, Order: o.Order, Seed: o.Seed, Resolution: o.Resolution, Settings: capacitySettings(*o),
		Percentiles: levelPercentiles(o.Rule)}
}

// levelPercentiles are the percentiles a level's metrics are computed
// with: the median and the pass rule's.
func levelPercentiles(r capacity.PassRule) []float64 {
	return slices.Compact([]float64{50, r.Percentile})
}
