package bench

import (
	"context"
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
}

// newLevelFunc returns the capacity.LevelFunc that runs levels with o: round(rate *
// (Warmup+Duration)) requests on vLLM's arrival process, the measured ones
// written to the ledger with their level and repeat, and summarised.
func newLevelFunc(o levelOptions) capacity.LevelFunc {
	var seq atomic.Uint64
	return func(ctx context.Context, rate float64, repeat int) (stats.Metrics, error) {
		nWarm := int(math.Round(rate * o.Warmup.Seconds()))
		n := max(1, int(math.Round(rate*o.Duration.Seconds())))
		seed := o.Seed + int64(repeat)*1_000_003 + int64(math.Round(rate*1000))
		offsets := openloop.Schedule(nWarm+n, rate, o.Burstiness, seed)
		first := seq.Add(uint64(nWarm+n)) - uint64(nWarm+n) + 1
		run := openloop.Execute(ctx, openloop.Options{Target: o.Target, Probe: o.Probe, Offsets: offsets, Sender: o.Sender,
			MaxInFlight: o.MaxInFlight, Drain: o.Drain, FirstSeq: first, Timeout: o.Timeout, Now: o.Now, OnFinish: o.OnFinish})
		measured := run.Measured(nWarm)
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
		return stats.Compute(measured, stats.Options{Percentiles: o.Percentiles}), nil
	}
}
