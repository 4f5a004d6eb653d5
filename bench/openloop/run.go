// Package openloop offers planned requests open loop, the way `vllm bench
// serve` does: each at its planned time whatever the others are doing, on
// vLLM's arrival schedule. bench and capacity runs are built on it.
package openloop

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vllm-prober/vllm-prober/internal/wait"
	"github.com/vllm-prober/vllm-prober/probe"
	"github.com/vllm-prober/vllm-prober/probe/ledger"
	"github.com/vllm-prober/vllm-prober/probe/schedule"
)

// errRunEnded is the cause of the request contexts still open when a run
// ends (interrupted, or its drain time is over): they become unfinished.
var errRunEnded = errors.New("run ended with the request outstanding")

// Options configures one open-loop run of planned requests.
type Options struct {
	Target, Probe string // names written into every Result
	// Offsets are the planned send times from the start of the run.
	Offsets []time.Duration
	Sender  schedule.Sender
	// MaxConcurrency caps requests in flight (vLLM's --max-concurrency): a
	// request whose time has come waits for a slot. 0 = no cap.
	MaxConcurrency int
	// MaxInFlight caps outstanding requests as the daemon's max_in_flight
	// does: a request whose time comes with MaxInFlight outstanding is
	// not sent and ends cancelled/in_flight_cap at once. 0 = no cap.
	MaxInFlight int
	// Drain bounds how long requests may stay outstanding after the last
	// planned send; past it they end unfinished. 0 = wait for all.
	Drain time.Duration
	// FirstSeq is the Seq of the first request (0 means 1).
	FirstSeq uint64
	// Start is the run's time zero; zero = when Execute is called. Workers
	// of one sharded run share it (--start-at), so their offsets line up.
	Start time.Time
	// Shard, when Count > 1, offers only the planned requests whose index
	// is Index modulo Count; each keeps the Seq of its index in the whole
	// schedule, so the shards of one schedule together are that schedule.
	Shard Shard
	// Timeout is the bound the Sender puts on one request; it is only
	// recorded in the Run, where the latency views count a client
	// timeout at it.
	Timeout  time.Duration
	Ledger   *ledger.Ledger                                   // nil = none
	OnFinish func(r *probe.Result)                            // called once per offered request; may be nil
	Now      func() time.Time                                 // nil = time.Now
	Sleep    func(ctx context.Context, d time.Duration) error // nil = a wait.Timer, the daemon's send-time wait
}

// Shard is one of Count parts of a schedule: the requests whose index
// (from 0) is Index modulo Count. The zero Shard is the whole schedule.
type Shard struct{ Index, Count int }

// Has reports whether the request at index i of the schedule is in s.
func (s Shard) Has(i int) bool { return s.Count <= 1 || i%s.Count == s.Index }

// Run is what one run produced.
type Run struct {
	// Results holds one Result per offered request, in planned order.
	// Requests whose time never came (the run was interrupted) are absent.
	Results []*probe.Result
	// Ended[i] is when Results[i] ended: its terminal response, its
	// timeout, its refusal by the in-flight cap, or the end of the run.
	Ended []time.Time
	// Queued[i] is how long Results[i] waited for a concurrency slot
	// after its time came (vLLM's client_queue_time).
	Queued []time.Duration
	Start  time.Time // the run's time zero
	End    time.Time // when the last offered request ended
	// Span is the planned duration: the last offset.
	Span time.Duration
	// Interrupted is set when the run's context ended before every planned
	// request was offered; Stopped is when offering stopped.
	Interrupted bool
	Stopped     time.Time
	// Timeout is Options.Timeout.
	Timeout time.Duration
}

// Measured returns the part of r after its first nWarm planned requests:
// their results, from the planned time of the last warm-up on.
func (r *Run) Measured(nWarm int) *Run {
	if nWarm <= 0 {
		return r
	}
	m := *r
	nWarm = min(nWarm, len(r.Results))
	m.Results, m.Ended, m.Queued = r.Results[nWarm:], r.Ended[nWarm:], r.Queued[nWarm:]
	if nWarm > 0 {
		off := r.Results[nWarm-1].Scheduled.Sub(r.Start)
		m.Start, m.Span = r.Start.Add(off), r.Span-off
	}
	return &m
}

// Duration is the wall time of the run, vLLM's benchmark duration.
func (r *Run) Duration() time.Duration { return r.End.Sub(r.Start) }

// Execute offers the planned requests open loop: each is sent at its
// planned time whatever the others are doing, so a slow server shows up as
// latency and failures, not as a lower offered load. When ctx ends no more
// requests are offered and outstanding ones end unfinished; Execute then
// returns what was offered. Every offered Result is written to the ledger.
func Execute(ctx context.Context, o Options) *Run {
	if o.Now == nil {
		o.Now = time.Now
	}
	// One timerfd for all the run's waits (the daemon's wait).
	var release func()
	o.Sleep, release = wait.OrTimer(o.Sleep)
	defer release()
	if o.FirstSeq == 0 {
		o.FirstSeq = 1
	}
	reqCtx, endRun := context.WithCancelCause(context.WithoutCancel(ctx))
	defer endRun(nil)
	stop := context.AfterFunc(ctx, func() { endRun(errRunEnded) })
	defer stop()
	var slots chan struct{}
	if o.MaxConcurrency > 0 {
		slots = make(chan struct{}, o.MaxConcurrency)
	}
	n := len(o.Offsets)
	// Preallocated: the send goroutines write Ended and Queued in place.
	mine := 0
	for j := range o.Offsets {
		if o.Shard.Has(j) {
			mine++
		}
	}
	run := &Run{Start: o.Start, Timeout: o.Timeout, Ended: make([]time.Time, mine), Queued: make([]time.Duration, mine)}
	if run.Start.IsZero() {
		run.Start = o.Now()
	}
	if n > 0 {
		run.Span = o.Offsets[n-1]
	}
	var wg sync.WaitGroup
	var inFlight atomic.Int64
	// A Preparer draws and encodes each request while the run waits for
	// its time, when there is time to wait (as the daemon's loop does).
	preparer, _ := o.Sender.(schedule.Preparer)
	for j, off := range o.Offsets {
		if !o.Shard.Has(j) {
			continue
		}
		planned := run.Start.Add(off)
		do := o.Sender.Do
		if preparer != nil && planned.After(o.Now()) {
			runtime.Gosched() // the request just started runs first
			if p := preparer.Prepare(o.FirstSeq + uint64(j)); p != nil {
				do = func(ctx context.Context, res *probe.Result) { preparer.DoPrepared(ctx, res, p) }
			}
		}
		if o.Sleep(ctx, planned.Sub(o.Now())) != nil {
			run.Interrupted, run.Stopped = true, o.Now()
			break
		}
		i := len(run.Results)
		res := &probe.Result{Seq: o.FirstSeq + uint64(j), Target: o.Target, Probe: o.Probe, Scheduled: planned}
		run.Results = append(run.Results, res)
		if o.MaxInFlight > 0 && inFlight.Load() >= int64(o.MaxInFlight) {
			refuse(o, res)
			run.Ended[i] = o.Now()
			continue
		}
		inFlight.Add(1)
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer inFlight.Add(-1)
			came := o.Now()
			send(reqCtx, o, slots, res, do, func() {
				run.Ended[i] = o.Now()
				if !res.Sent.IsZero() {
					run.Queued[i] = max(res.Sent.Sub(came), 0)
				}
			})
		}()
	}
	if o.Drain > 0 {
		t := time.AfterFunc(o.Drain, func() { endRun(errRunEnded) })
		defer t.Stop()
	}
	wg.Wait()
	run.End = o.Now()
	run.Ended, run.Queued = run.Ended[:len(run.Results)], run.Queued[:len(run.Results)]
	return run
}

// send waits for a concurrency slot, sends through do (the Sender's Do),
// calls ended once the request has ended and finishes the Result.
func send(ctx context.Context, o Options, slots chan struct{}, res *probe.Result, do func(context.Context, *probe.Result), ended func()) {
	sent := true
	if slots != nil {
		select {
		case slots <- struct{}{}:
			defer func() { <-slots }()
		case <-ctx.Done():
			sent = false
		}
	}
	if sent && ctx.Err() == nil {
		do(ctx, res)
	}
	if ctx.Err() != nil && (res.Disposition == "" || res.Disposition == probe.Cancelled) {
		res.Disposition, res.Reason, res.Error = probe.Unfinished, "", errRunEnded.Error()
		res.SLOViolations, res.QualityFailures = nil, nil
	}
	ended()
	finish(o, res)
}

// refuse ends a request the in-flight cap does not let out, as the
// daemon's max_in_flight does.
func refuse(o Options, res *probe.Result) {
	res.Disposition, res.Reason = probe.Cancelled, probe.ReasonInFlightCap
	res.Error = fmt.Sprintf("max_in_flight %d reached, not sent", o.MaxInFlight)
	finish(o, res)
}

// finish writes an ended request to the ledger and reports it.
func finish(o Options, res *probe.Result) {
	o.Ledger.Write(res)
	if o.OnFinish != nil {
		o.OnFinish(res)
	}
}
