package perf

import (
	"context"
	"sync"
	"time"

	"github.com/vllm-prober/vllm-prober/bench/openloop"
	"github.com/vllm-prober/vllm-prober/config"
	"github.com/vllm-prober/vllm-prober/internal/wait"
	"github.com/vllm-prober/vllm-prober/probe"
	"github.com/vllm-prober/vllm-prober/probe/schedule"
	"github.com/vllm-prober/vllm-prober/simulator"
)

// ScheduleResult is the open-loop schedule's punctuality at one rate.
type ScheduleResult struct {
	Rate     float64
	Offered  int
	Achieved float64 // requests sent per second of the run
	// Lag is Sent - Scheduled of every sent request with the real request
	// path against the simulator.
	Lag Stats
	// SchedulerLag is the same with a Sender that only stamps its send
	// time: the scheduler and goroutine start alone, without HTTP.
	SchedulerLag Stats
	// TimerLag is SchedulerLag with the engine sleeping on a plain runtime
	// timer, as it did before wait.Precise: the baseline, in the same run.
	TimerLag Stats
	// PerWaitLag is SchedulerLag with a timerfd made and closed per wait
	// (wait.Precise), as the engine waited before each loop kept a
	// wait.Timer, in the same run.
	PerWaitLag Stats
	Failed     int // sent requests that did not end accepted
}

// Schedule offers rate requests/s (Poisson, one output token) for d, once
// against an in-process simulator with a near-zero latency model and then
// with a no-op Sender on each of the engine's waits (its own, a timerfd per
// wait, a runtime timer), and reports the schedule lag of each.
func Schedule(ctx context.Context, rate float64, d time.Duration) (ScheduleResult, error) {
	out := ScheduleResult{Rate: rate}
	sim, url, err := startSimulator(func(o *simulator.Options) {
		o.MaxNumSeqs = 4096
		o.PrefillBase, o.PrefillPerToken, o.DecodeBase, o.DecodePerSeq = 100*time.Microsecond, 0, 100*time.Microsecond, 0
	})
	if err != nil {
		return out, err
	}
	defer sim.Close()
	offered, results, err := load{url: url, rate: rate, burstiness: 1, outputTokens: 1, duration: d}.run(ctx)
	if err != nil {
		return out, err
	}
	out.Offered = offered
	var lags []time.Duration
	for _, r := range results {
		if r.Sent.IsZero() {
			continue
		}
		lags = append(lags, r.Lag)
		if r.Disposition != probe.Accepted {
			out.Failed++
		}
	}
	out.Lag = Summarize(lags)
	out.Achieved = float64(len(lags)) / d.Seconds()

	noop := func(config.Target, config.Probe) (schedule.Sender, error) { return stampSender{}, nil }
	for _, c := range []struct {
		sleep func(context.Context, time.Duration) error
		dst   *Stats
	}{{nil, &out.SchedulerLag}, {wait.Precise, &out.PerWaitLag}, {wait.Sleep, &out.TimerLag}} {
		_, results, err = load{url: url, rate: rate, burstiness: 1, outputTokens: 1, duration: d, newSender: noop, sleep: c.sleep}.run(ctx)
		if err != nil {
			return out, err
		}
		lags = lags[:0]
		for _, r := range results {
			lags = append(lags, r.Lag)
		}
		*c.dst = Summarize(lags)
	}
	return out, nil
}

// stampSender sends nothing: it stamps the send time as the requester does
// and accepts.
type stampSender struct{}

func (stampSender) Do(_ context.Context, res *probe.Result) {
	res.Sent = time.Now()
	res.Lag = res.Sent.Sub(res.Scheduled)
	res.Disposition = probe.Accepted
}

func (stampSender) Close() {}

// BenchScheduleResult is bench's open-loop runner's punctuality at one
// rate, scheduler only (a Sender that stamps its send time).
type BenchScheduleResult struct {
	Rate     float64
	Offered  int
	Precise  Stats // Sleep nil: one wait.Timer for the run, bench's wait
	PerWait  Stats // Sleep = wait.Precise: a timerfd made and closed per wait, bench's wait before wait.Timer
	Timer    Stats // Sleep = wait.Sleep, bench's wait before wait.Precise, in the same run
	Sharded2 Stats // wait.Precise, the schedule split into two shards run at once
}

// BenchSchedule offers the Poisson schedule of rate requests/s for d
// through bench/openloop four times: on the precise wait with one timerfd
// for the run, with a timerfd per wait, on a plain runtime timer, and split
// into two shards (--shard 0/2 and 1/2) from a common start, as two
// workers run it; and reports the lag of each.
func BenchSchedule(ctx context.Context, rate float64, d time.Duration) BenchScheduleResult {
	n := int(rate * d.Seconds())
	offsets := openloop.Schedule(n, rate, 1, 1)
	out := BenchScheduleResult{Rate: rate, Offered: n}
	lags := func(runs ...*openloop.Run) Stats {
		var l []time.Duration
		for _, r := range runs {
			for _, res := range r.Results {
				l = append(l, res.Lag)
			}
		}
		return Summarize(l)
	}
	out.Precise = lags(openloop.Execute(ctx, openloop.Options{Offsets: offsets, Sender: stampSender{}}))
	out.PerWait = lags(openloop.Execute(ctx, openloop.Options{Offsets: offsets, Sender: stampSender{}, Sleep: wait.Precise}))
	out.Timer = lags(openloop.Execute(ctx, openloop.Options{Offsets: offsets, Sender: stampSender{}, Sleep: wait.Sleep}))
	start := time.Now().Add(50 * time.Millisecond)
	runs := make([]*openloop.Run, 2)
	var wg sync.WaitGroup
	for i := range runs {
		wg.Go(func() {
			runs[i] = openloop.Execute(ctx, openloop.Options{Offsets: offsets, Sender: stampSender{},
				Start: start, Shard: openloop.Shard{Index: i, Count: 2}})
		})
	}
	wg.Wait()
	out.Sharded2 = lags(runs...)
	return out
}
