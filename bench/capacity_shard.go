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
	"github.com/vllm-prober/vllm-prober/bench/openloop"
	"github.com/vllm-prober/vllm-prober/bench/report"
)

// capacityShardFile is what a worker of a sharded capacity search saves
// for the merge (docs/bench.md, "Sharded runs"): the search it belongs to,
// its part, everything that makes the staircase's table and verdict, and
// every request it offered in every run's measured window.
type capacityShardFile struct {
	RunID   string          `json:"run_id"`
	Shard   string          `json:"shard"` // I/N
	StartAt time.Time       `json:"start_at"`
	Header  capacity.Header `json:"header"` // its Burstiness is in Burstiness
	// Burstiness is the header's, in strconv form: JSON has no inf.
	Burstiness string            `json:"burstiness"`
	Rule       capacity.PassRule `json:"rule"`
	Rates      []float64         `json:"rates"`
	Repeats    int               `json:"repeats"`
	Order      string            `json:"order"`
	Seed       int64             `json:"seed"`
	// Resolution is the search's; a fixed staircase does not bisect.
	Resolution float64        `json:"resolution"`
	Settings   map[string]any `json:"settings"` // the report's settings
	// Percentiles are the ones each run's metrics are computed with.
	Percentiles []float64          `json:"percentiles"`
	Runs        []capacityShardRun `json:"runs"` // in the order they ran
}

// capacityShardRun is the measured window of one repeat of one level, as
// one worker offered it.
type capacityShardRun struct {
	Rate   float64 `json:"rate"`
	Repeat int     `json:"repeat"` // from 0
	shardPart
}

// shardPart is one worker's part of one open-loop run: the run's planned
// frame, the worker's end, and the requests it offered.
type shardPart struct {
	Start       time.Time      `json:"start"`
	SpanNS      time.Duration  `json:"span_ns"`
	TimeoutNS   time.Duration  `json:"timeout_ns"`
	End         time.Time      `json:"end"`
	Interrupted bool           `json:"interrupted"`
	Stopped     time.Time      `json:"stopped"`
	Requests    []shardRequest `json:"requests"` // in planned order
}

// newShardPart records a worker's run for the merge.
func newShardPart(run *openloop.Run) shardPart {
	p := shardPart{Start: run.Start, SpanNS: run.Span, TimeoutNS: run.Timeout, End: run.End, Interrupted: run.Interrupted,
		Stopped: run.Stopped}
	for i, r := range run.Results {
		c := *r
		c.Text = "" // the ledger keeps the text of failures; the merge needs none
		p.Requests = append(p.Requests, shardRequest{Result: &c, Ended: run.Ended[i], QueuedNS: run.Queued[i]})
	}
	return p
}

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
func fixedStaircase(w io.Writer, o *CapacityOptions, h capacity.Header) *capacityShardFile {
	wo := &o.Workload
	if wo.StartAt.IsZero() {
		return nil
	}
	fmt.Fprintf(w, "Fixed staircase from %s: %d levels x %d repeats, each run at its computed start, no bisection\n",
		wo.StartAt.UTC().Format(time.RFC3339Nano), len(o.Rates), o.Repeats)
	if !wo.sharded() {
		return nil
	}
	fmt.Fprintf(w, "Shard %s: every run's requests whose index is %d modulo %d\n", shardString(wo.Shard), wo.Shard.Index, wo.Shard.Count)
	burstiness := strconv.FormatFloat(h.Burstiness, 'g', -1, 64)
	h.Burstiness = 0
	return &capacityShardFile{RunID: capacityRunID(o), Shard: shardString(wo.Shard), StartAt: wo.StartAt, Header: h,
		Burstiness: burstiness, Rule: o.Rule,
		Rates: o.Rates, Repeats: o.Repeats, Order: o.Order, Seed: o.Seed, Resolution: o.Resolution, Settings: capacitySettings(*o),
		Percentiles: levelPercentiles(o.Rule)}
}

// levelPercentiles are the percentiles a level's metrics are computed
// with: the median and the pass rule's.
func levelPercentiles(r capacity.PassRule) []float64 {
	return slices.Compact([]float64{50, r.Percentile})
}

// add records one run's measured part; f may be nil (unsharded).
func (f *capacityShardFile) add(rate float64, repeat int, measured *openloop.Run) {
	if f != nil {
		f.Runs = append(f.Runs, capacityShardRun{Rate: rate, Repeat: repeat, shardPart: newShardPart(measured)})
	}
}

// writeCapacityShard writes a worker's shard result whole.
func writeCapacityShard(path string, f *capacityShardFile) error {
	b, err := json.Marshal(map[string]any{"capacity_shard": f})
	if err == nil {
		err = report.WriteFile(path, report.Bytes(b))
	}
	if err != nil {
		return fmt.Errorf("write shard result: %w", err)
	}
	return nil
}
