package bench

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync/atomic"
	"time"

	"github.com/vllm-prober/vllm-prober/bench/capacity"
	"github.com/vllm-prober/vllm-prober/bench/openloop"
	"github.com/vllm-prober/vllm-prober/bench/stats"
	"github.com/vllm-prober/vllm-prober/probe"
	"github.com/vllm-prober/vllm-prober/probe/ledger"
	"github.com/vllm-prober/vllm-prober/probe/schedule"
)

// levelOptions configures how newLevelFunc runs one repeat of a level.
type levelOptions struct {
	Target, Probe string
	Sender        schedule.Sender
	Burstiness    float64
	// MaxInFlight caps outstanding requests like a probe's max_in_flight:
	// a request over it is not sent and ends cancelled/in_flight_cap.
	// 0 = no cap.
	MaxInFlight int
	// Duration is the measured part of a level; Warmup precedes it at the
	// same rate in the same open-loop schedule and is not counted.
	Duration, Warmup time.Duration
	// Drain bounds how long requests may stay outstanding after the last
	// planned send; 0 = wait for all (each bounded by its timeout).
	Drain time.Duration
	// Timeout is the Sender's bound on one request, at which the latency
	// views count a client timeout.
	Timeout     time.Duration
	Seed        int64
	Percentiles []float64 // the Dists' percentiles; include the pass rule's
	Ledger      *ledger.Ledger
	Now         func() time.Time
	OnFinish    func(*probe.Result) // every request, warm-up included; may be nil
	OnLedger    func(*probe.Result) // every request written to Ledger; may be nil
	// Start, when set, is the staircase's computed time zero (--start-at):
	// each run starts at a time computed from it, never negotiated, so the
	// workers of a sharded search send their shards of a run together.
	Start time.Time
	// Shard is this worker's part of every run's schedule.
	Shard openloop.Shard
	// OnRun receives every run's measured part; may be nil.
	OnRun func(rate float64, repeat int, measured *openloop.Run)
}

// levelGap separates the planned end of a run (its last send plus the
// drain bound, or the timeout) from the next run's computed start.
const levelGap = 2 * time.Second

// slot is how long a run planned with offsets may take: its last send,
// then its drain bound (each request's timeout when there is none), then
// levelGap.
func (o *levelOptions) slot(offsets []time.Duration) time.Duration {
	bound := o.Drain
	if bound <= 0 {
		bound = o.Timeout
	}
	return offsets[len(offsets)-1] + bound + levelGap
}

// errLate is why a run of a staircase with a computed start is refused.
var errLate = errors.New("worker late")

// newLevelFunc returns the capacity.LevelFunc that runs levels with o: round(rate *
// (Warmup+Duration)) requests on vLLM's arrival process, the measured ones
// written to the ledger with their level and repeat, and summarised.
func newLevelFunc(o levelOptions) capacity.LevelFunc {
	var seq atomic.Uint64
	next := o.Start
	return func(ctx context.Context, rate float64, repeat int) (stats.Metrics, error) {
		nWarm := int(math.Round(rate * o.Warmup.Seconds()))
		n := max(1, int(math.Round(rate*o.Duration.Seconds())))
		seed := o.Seed + int64(repeat)*1_000_003 + int64(math.Round(rate*1000))
		offsets := openloop.Schedule(nWarm+n, rate, o.Burstiness, seed)
		first := seq.Add(uint64(nWarm+n)) - uint64(nWarm+n) + 1
		start := next
		if !start.IsZero() {
			next = start.Add(o.slot(offsets))
			if now := o.Now(); now.After(start) {
				return stats.Metrics{}, fmt.Errorf("%w: its computed start %s is %v in the past: this worker fell behind the staircase (a longer --drain or a later --start-at gives it room)",
					errLate, start.UTC().Format(time.RFC3339Nano), now.Sub(start).Round(time.Millisecond))
			}
		}
		run := openloop.Execute(ctx, openloop.Options{Target: o.Target, Probe: o.Probe, Offsets: offsets, Sender: o.Sender,
			MaxInFlight: o.MaxInFlight, Drain: o.Drain, FirstSeq: first, Timeout: o.Timeout, Now: o.Now, OnFinish: o.OnFinish,
			Start: start, Shard: o.Shard})
		measured := measuredShare(run, offsets, nWarm, o.Shard)
		for _, r := range measured.Results {
			r.Level, r.Repeat = rate, repeat+1
			o.Ledger.Write(r)
			if o.OnLedger != nil {
				o.OnLedger(r)
			}
		}
		if err := ctx.Err(); err != nil {
			return stats.Metrics{}, err
		}
		if o.OnRun != nil {
			o.OnRun(rate, repeat, measured)
		}
		return stats.Compute(measured, stats.Options{Percentiles: o.Percentiles}), nil
	}
}

// measuredShare is run.Measured(nWarm) for a run that offered only its
// shard of the planned requests: the warm-up is the first nWarm planned
// requests of the whole schedule, of which the run holds its share.
func measuredShare(run *openloop.Run, offsets []time.Duration, nWarm int, shard openloop.Shard) *openloop.Run {
	if shard.Count <= 1 || nWarm <= 0 {
		return run.Measured(nWarm)
	}
	mine := 0
	for j := range min(nWarm, len(offsets)) {
		if shard.Has(j) {
			mine++
		}
	}
	mine = min(mine, len(run.Results))
	m := *run
	m.Results, m.Ended, m.Queued = run.Results[mine:], run.Ended[mine:], run.Queued[mine:]
	off := offsets[min(nWarm, len(offsets))-1]
	m.Start, m.Span = run.Start.Add(off), run.Span-off
	return &m
}
