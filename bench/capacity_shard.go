package bench

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	"github.com/vllm-prober/vllm-prober/bench/capacity"
	"github.com/vllm-prober/vllm-prober/bench/openloop"
)

// capacityShardFile is what a worker of a sharded capacity search saves
// for the merge (docs/bench.md, "Sharded runs"): the search it belongs to,
// its part, everything that makes the staircase's table and verdict, and
// every request it offered in every run's measured window.
type capacityShardFile struct {
	RunID    string            `json:"run_id"`
	Shard    string            `json:"shard"` // I/N
	StartAt  time.Time         `json:"start_at"`
	Header   capacity.Header   `json:"header"`
	Rule     capacity.PassRule `json:"rule"`
	Rates    []float64         `json:"rates"`
	Repeats  int               `json:"repeats"`
	Order    string            `json:"order"`
	Seed     int64             `json:"seed"`
	Settings map[string]any    `json:"settings"` // the report's settings
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
