package schedule

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"runtime"
	"sync"
	"time"

	"github.com/vllm-prober/vllm-prober/config"
	"github.com/vllm-prober/vllm-prober/internal/redact"
	"github.com/vllm-prober/vllm-prober/internal/wait"
	"github.com/vllm-prober/vllm-prober/probe"
	"github.com/vllm-prober/vllm-prober/probe/client"
	"github.com/vllm-prober/vllm-prober/probe/fingerprint"
)

// loop is the scheduling loop of one configuration of one pair.
type loop struct {
	// key and fingerprint are all of the pair a loop keeps: the Sender
	// holds what the requests need, and a config.Pair (~880 bytes) kept
	// by every loop was most of a loop's heap at 1,000 pairs
	// (TestLoopBytesPerPair).
	key         pairKey
	fingerprint string
	sender      Sender
	state       *pairState
	arrivals    *Arrivals
	maxInFlight int64
	// fingerprints observes the fingerprints of this loop's requests; nil
	// when the probe has none.
	fingerprints *fingerprint.Tracker

	schedCtx   context.Context // ends when the loop must stop scheduling
	stopSched  context.CancelFunc
	reqCtx     context.Context // parent of this loop's requests
	cancelReqs context.CancelCauseFunc
	done       chan struct{}  // closed when the loop goroutine has returned
	reqs       sync.WaitGroup // this loop's outstanding requests
	// next is the planned time the loop was waiting for; written by the
	// loop goroutine, read once done is closed.
	next time.Time
}

// startLoop starts scheduling one pair; e.mu is held.
func (e *Engine) startLoop(p config.Pair, sender Sender, start time.Time) *loop {
	st := e.pairState(p.Key)
	st.fingerprints = fingerprint.NewTracker(p, st.fingerprints, e.logger)
	l := &loop{
		key:          p.Key,
		fingerprint:  p.Fingerprint,
		sender:       sender,
		state:        st,
		arrivals:     NewArrivals(p.Probe.Rate, p.Probe.Burstiness, loopSeed(pairSeed(p.Key, p.Probe), st.seq.Load())),
		maxInFlight:  int64(p.Probe.MaxInFlight),
		fingerprints: st.fingerprints,
		done:         make(chan struct{}),
	}
	first := start.Add(l.arrivals.first())
	if !st.resume.IsZero() {
		if t, ok := resumeAt(start, st.resume, st.resumeMean, l.arrivals.mean); ok {
			first = t
		}
		st.resume = time.Time{}
	}
	if l.maxInFlight <= 0 {
		l.maxInFlight = int64(config.DefaultProbe.MaxInFlight) // a probe built in code, not loaded
	}
	if st.removed == nil {
		st.removed = make(chan struct{})
	}
	l.schedCtx, l.stopSched = context.WithCancel(e.root)
	l.reqCtx, l.cancelReqs = context.WithCancelCause(e.root)
	e.logger.Info("probe loop started", "target", p.Key.Target, "probe", p.Key.Probe,
		"rate", p.Probe.Rate, "burstiness", p.Probe.Burstiness, "max_in_flight", l.maxInFlight)
	go e.run(l, first)
	return l
}

// loopSeed is the arrival seed of a pair's loop started after seq
// requests: the pair's seed for its first loop, so a config's schedule
// repeats from run to run, and a different one for a loop restarted by a
// reload, which would otherwise replay the gaps its predecessor already
// used.
func loopSeed(pair int64, seq uint64) int64 {
	return pair ^ int64(seq*0x9e3779b97f4a7c15)
}

// resumeAt returns the first planned time of a pair's loop restarted at
// start by a reload, from the time next its previous loop was waiting for
// with mean gap oldMean: that time itself (also when it is overdue: it
// fires at once, late), or, when the rate changed, the remaining wait
// scaled to the new mean gap newMean. The pair's schedule continues
// instead of starting over, so reloads do not change its offered rate.
// ok is false when either rate is zero (no gap to scale).
func resumeAt(start, next time.Time, oldMean, newMean float64) (t time.Time, ok bool) {
	rem := next.Sub(start)
	switch {
	case rem <= 0 || oldMean == newMean:
		return next, true
	case math.IsInf(oldMean, 1) || math.IsInf(newMean, 1) || !(oldMean > 0):
		return time.Time{}, false
	}
	return start.Add(seconds(rem.Seconds() * newMean / oldMean)), true
}

// run fires at planned times first + the sum of the gaps drawn so far:
// absolute times, so the schedule never drifts and never waits for
// responses. A loop that falls behind still sends every request, late.
// With a Preparer the loop draws and encodes the next request before it
// waits for its time, and only when there is time to wait: a loop that is
// behind leaves that work to the requests' goroutines, as without one.
func (e *Engine) run(l *loop, first time.Time) {
	defer close(l.done)
	// A plain runtime timer made sends 0.5 ms late at the median
	// (docs/BENCHMARKS.md, schedule accuracy); the loop keeps one timerfd
	// for all its waits.
	sleep, release := wait.OrTimer(e.o.Sleep)
	defer release()
	preparer, _ := l.sender.(Preparer)
	var prepared *client.Prepared
	planned := first
	for {
		l.next = planned
		if preparer != nil && prepared == nil && planned.After(e.o.Now()) {
			// The request just fired runs first: preparing is not its lag.
			runtime.Gosched()
			// Only this loop adds to seq: the next request is seq+1.
			prepared = prepareApart(preparer, l.state.seq.Load()+1)
		}
		// A Sleep may end early; the planned time decides, not the wake-up.
		for d := planned.Sub(e.o.Now()); d > 0; d = planned.Sub(e.o.Now()) {
			if err := sleep(l.schedCtx, d); err != nil {
				return
			}
		}
		if l.schedCtx.Err() != nil {
			return
		}
		if e.fire(l, planned, preparer, prepared) {
			prepared = nil
		}
		planned = planned.Add(l.arrivals.Next())
	}
}

// prepareApart returns p.Prepare(seq) run on a goroutine of its own:
// encoding a request grows a stack by KiBs, which a loop, parked between
// requests for most of its life, would keep until GCs shrink it back
// (TestLoopStackPerIdlePair); a goroutine that ends gives its stack back.
func prepareApart(p Preparer, seq uint64) *client.Prepared {
	done := make(chan *client.Prepared, 1)
	go func() { done <- p.Prepare(seq) }()
	return <-done
}

// fire offers one request and sends it in its own goroutine (prepared by
// preparer when prepared is not nil), or ends it at once as
// cancelled/in_flight_cap when max_in_flight are outstanding. It reports
// whether it sent the request, and so used prepared: a refused request
// leaves it to the next one, which sends the item the refused one would
// not have drawn.
func (e *Engine) fire(l *loop, planned time.Time, preparer Preparer, prepared *client.Prepared) bool {
	res := &probe.Result{
		Seq:       l.state.seq.Add(1),
		Target:    l.key.Target,
		Probe:     l.key.Probe,
		Replica:   l.key.Replica,
		Scheduled: planned,
	}
	e.sink.Offered(l.key)
	// Only the current loop of a pair adds to its in-flight count, so the
	// check and the increment cannot race with another fire.
	if l.state.inFlight.Load() >= l.maxInFlight {
		res.Disposition, res.Reason = probe.Cancelled, probe.ReasonInFlightCap
		res.Error = fmt.Sprintf("max_in_flight %d reached, not sent", l.maxInFlight)
		e.finish(res)
		return false
	}
	l.state.inFlight.Add(1)
	l.reqs.Add(1)
	e.requests.Add(1)
	do := l.sender.Do
	if prepared != nil {
		do = func(ctx context.Context, res *probe.Result) { preparer.DoPrepared(ctx, res, prepared) }
	}
	go func() {
		defer e.requests.Done()
		defer l.reqs.Done()
		sendSafely(l.reqCtx, e.logger, res, do)
		l.fingerprints.Observe(res)
		l.state.inFlight.Add(-1)
		e.finish(res)
	}()
	return true
}

// sendSafely runs one request through do (a Sender's Do); a panicking
// Sender ends its request as a server_failure instead of taking the
// prober down.
func sendSafely(ctx context.Context, logger *slog.Logger, res *probe.Result, do func(context.Context, *probe.Result)) {
	defer func() {
		if p := recover(); p != nil {
			logger.Error("request panicked", "target", res.Target, "probe", res.Probe, "seq", res.Seq, "panic", p)
			res.Disposition, res.Reason = probe.ServerFailure, probe.ReasonProtocol
			res.Error = "internal error in the prober"
		}
	}()
	do(ctx, res)
	// A redirect's Location or a proxy's error may hold URLs with secrets.
	res.Error = redact.Text(res.Error)
}

// finish hands a finished Result to the Sinks, in order.
func (e *Engine) finish(res *probe.Result) {
	e.sink.Finished(res)
}

// retire stops a loop's scheduling now and lets its requests finish in the
// background; e.mu is held and l is no longer in e.loops. removed says a
// reload removed the pair; otherwise it changed and runs on in a new loop.
func (e *Engine) retire(l *loop, removed bool) {
	l.stopSched()
	<-l.done
	// A changed pair's next loop continues this schedule (resumeAt); a
	// removed pair that comes back later starts afresh.
	l.state.resume, l.state.resumeMean = time.Time{}, 0
	if !removed {
		l.state.resume, l.state.resumeMean = l.next, l.arrivals.mean
	}
	gone := l.state.removed
	if gone == nil { // a loop always made one; never left open by mistake
		gone = make(chan struct{})
		close(gone)
	} else if removed {
		close(gone)
		l.state.removed = nil
	}
	e.logger.Info("probe loop stopped", "target", l.key.Target, "probe", l.key.Probe, "replica", l.key.Replica,
		"removed", removed, "in_flight", l.state.inFlight.Load())
	l.state.draining++
	e.drains.Add(1)
	go e.drain(l, gone)
}

// drain lets a retired loop's requests end and closes its Sender. gone is
// closed when a reload removes the pair (at once for a loop retired by
// the removal): from then its requests get the grace period, and the rest
// are cancelled with ErrRemoved. A loop retired because its pair changed
// is not abandoned: its requests run to their own end (the probe timeout
// bounds them) while the pair runs, so a reload never turns a request
// that would have timed out or failed into an abandoned one
// (docs/design.md, "Dispositions and accounting"). The last drain of a
// pair that is no longer running tells the Sinks it stopped: its series go
// only after its final Finished was counted.
func (e *Engine) drain(l *loop, gone <-chan struct{}) {
	defer e.drains.Done()
	idle := waitChan(&l.reqs)
	select {
	case <-idle:
	case <-gone:
		e.awaitGrace(idle, e.root.Done())
	case <-e.root.Done():
	}
	// At shutdown its cause ends the requests. Root closes Done before it
	// cancels its children, so cancelling here too could win that race
	// and end them removed instead.
	if e.root.Err() == nil {
		l.cancelReqs(probe.ErrRemoved)
	}
	<-idle
	l.sender.Close()
	e.mu.Lock()
	defer e.mu.Unlock()
	l.state.draining--
	if l.state.draining == 0 && e.loops[l.key] == nil {
		e.sink.PairStopped(l.key)
		e.keepStopped(l.key, l.state)
	}
}
