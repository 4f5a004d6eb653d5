package shard

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/vllm-prober/vllm-prober/bench/capacity"
	"github.com/vllm-prober/vllm-prober/bench/openloop"
	"github.com/vllm-prober/vllm-prober/bench/report"
)

// CapacityFile is what a worker of a sharded capacity search saves for
// the merge (docs/bench.md, "Sharded runs"): the search it belongs to, its
// part, everything that makes the staircase's table and verdict, and every
// request it offered in every run's measured window.
type CapacityFile struct {
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
	Percentiles []float64     `json:"percentiles"`
	Runs        []CapacityRun `json:"runs"` // in the order they ran
}

// CapacityRun is the measured window of one repeat of one level, as one
// worker offered it.
type CapacityRun struct {
	Rate   float64 `json:"rate"`
	Repeat int     `json:"repeat"` // from 0
	Part
}

// Part is one worker's part of one open-loop run: the run's planned
// frame, the worker's end, and the requests it offered.
type Part struct {
	Start       time.Time     `json:"start"`
	SpanNS      time.Duration `json:"span_ns"`
	TimeoutNS   time.Duration `json:"timeout_ns"`
	End         time.Time     `json:"end"`
	Interrupted bool          `json:"interrupted"`
	Stopped     time.Time     `json:"stopped"`
	Requests    []Request     `json:"requests"` // in planned order
}

// newPart records a worker's run for the merge.
func newPart(run *openloop.Run) Part {
	p := Part{Start: run.Start, SpanNS: run.Span, TimeoutNS: run.Timeout, End: run.End, Interrupted: run.Interrupted,
		Stopped: run.Stopped}
	for i, r := range run.Results {
		c := *r
		c.Text = "" // the ledger keeps the text of failures; the merge needs none
		p.Requests = append(p.Requests, Request{Result: &c, Ended: run.Ended[i], QueuedNS: run.Queued[i]})
	}
	return p
}

// Add records one run's measured part; f may be nil (unsharded).
func (f *CapacityFile) Add(rate float64, repeat int, measured *openloop.Run) {
	if f != nil {
		f.Runs = append(f.Runs, CapacityRun{Rate: rate, Repeat: repeat, Part: newPart(measured)})
	}
}

// WriteCapacity writes a worker's shard result whole.
func WriteCapacity(path string, f *CapacityFile) error {
	b, err := json.Marshal(map[string]any{"capacity_shard": f})
	if err == nil {
		err = report.WriteFile(path, report.Bytes(b))
	}
	if err != nil {
		return fmt.Errorf("write shard result: %w", err)
	}
	return nil
}
