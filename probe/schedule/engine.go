// Package schedule runs the probes: one open-loop loop per (target, probe)
// pair that sends each request at its planned arrival time, whatever the
// earlier ones are doing, and tells the sinks what started, stopped, was
// offered and finished (docs/design.md, Pair lifecycle).
package schedule

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vllm-prober/vllm-prober/config"
	"github.com/vllm-prober/vllm-prober/probe"
	"github.com/vllm-prober/vllm-prober/probe/client"
	"github.com/vllm-prober/vllm-prober/probe/fingerprint"
)

const (
	// defaultGrace is how long in-flight requests may finish at shutdown
	// or removal before they are cancelled.
	defaultGrace = 10 * time.Second
	// defaultKeptStopped is how many stopped pairs keep their state by
	// default (EngineOptions.KeptStopped).
	defaultKeptStopped = 1024
)

var (
	// ErrUnknownPair is returned by ProbeOnce for a pair that does not
	// run: a target or probe the configuration does not pair, or a replica
	// not discovered.
	ErrUnknownPair = errors.New("no such running pair (target, probe and replica)")
	// errEngineStopped is returned by Apply and ProbeOnce after Shutdown.
	errEngineStopped = errors.New("engine stopped")
)

// Sender sends one request and fills its Result; *client.Requester is the
// production Sender.
type Sender interface {
	// Do expects res.Seq, Target, Probe and Scheduled set, fills the rest
	// and returns when the request has ended; it must return promptly once
	// ctx is cancelled.
	Do(ctx context.Context, res *probe.Result)
	// Close releases idle connections; no Do is running or will run.
	Close()
}

// Preparer is a Sender that can draw and encode its next request ahead of
// the request's planned time (*client.Requester is one): the loop prepares
// while it waits, so the wake-up has only to stamp and write the request.
type Preparer interface {
	// Prepare returns request seq ready to send, or nil when preparing
	// would need a round trip to the target (then Do does the work).
	Prepare(seq uint64) *client.Prepared
	// DoPrepared is Do for a request Prepare returned (or nil).
	DoPrepared(ctx context.Context, res *probe.Result, p *client.Prepared)
}

// EngineOptions configures an Engine; the zero value is usable.
type EngineOptions struct {
	Logger *slog.Logger
	// Sinks get the life of every pair and the facts of every request, in
	// this order (Sink); nil = none.
	Sinks []probe.Sink
	// Grace is how long in-flight requests may finish at shutdown or when
	// their pair is removed; 0 = 10s. The requests of a changed pair's
	// previous configuration run to their own end (drain).
	Grace time.Duration
	Now   func() time.Time                                 // nil = time.Now
	Sleep func(ctx context.Context, d time.Duration) error // nil = a wait.Timer per loop
	// NewRequester builds the Sender of a pair; nil = client.New.
	NewRequester func(config.Target, config.Probe) (Sender, error)
	// KeptStopped is how many stopped pairs (removed, drained) keep their
	// state, so that one coming back continues its seq; the state of the
	// one stopped longest ago goes beyond it; 0 = 1024.
	KeptStopped int
}

// Engine runs one open-loop scheduling loop per configured (target, probe)
// pair. It is the only owner of the live set of pairs: Apply changes it and
// tells the Sinks which pairs started and stopped; every offered request
// ends in exactly one Result that goes to the Sinks, in order
// (docs/design.md, Pair lifecycle).
type Engine struct {
	o        EngineOptions
	sink     sinks
	logger   *slog.Logger
	root     context.Context // parent of every request; cancelled at shutdown
	stopRoot context.CancelCauseFunc

	mu     sync.Mutex
	loops  map[pairKey]*loop
	states map[pairKey]*pairState // outlive loops: seq continues across changes
	// stoppedKeys are the stopped pairs whose state is kept, the one
	// stopped longest ago first (KeptStopped bounds them).
	stoppedKeys *list.List
	// seqFloor is the highest seq of a pair whose state was forgotten: a
	// pair's state created later starts there, so a pair that comes back
	// after its state went never repeats a seq within this run.
	seqFloor uint64
	stopped  bool

	requests     sync.WaitGroup // in-flight requests of every loop, old ones included
	drains       sync.WaitGroup // retired loops finishing their requests
	shutdownOnce sync.Once
}

// pairState is what a pair keeps across a change of its configuration.
type pairState struct {
	seq      atomic.Uint64
	inFlight atomic.Int64
	// resume and resumeMean are the planned time the retired loop of a
	// changed pair was waiting for and its mean gap in seconds (zero time:
	// none); guarded by Engine.mu.
	resume     time.Time
	resumeMean float64
	// fingerprints are the output fingerprint baselines of the pair's
	// prompts: kept across changes whose prompts answer the same, dropped
	// when the pair stops (nil: no fingerprint); guarded by Engine.mu.
	fingerprints *fingerprint.Tracker
	// draining counts the pair's retired loops whose requests have not all
	// ended; guarded by Engine.mu.
	draining int
	// removed is closed when a reload removes the pair, so that the
	// drains of its earlier, changed configurations give their requests
	// the grace period from then (drain); a pair started again gets a new
	// one (startLoop); guarded by Engine.mu.
	removed chan struct{}
	// stoppedAt is the pair's element in Engine.stoppedKeys while it is
	// stopped (nil: running or draining); guarded by Engine.mu.
	stoppedAt *list.Element
}

// NewEngine returns an Engine with no pairs; Apply starts them.
func NewEngine(o EngineOptions) *Engine {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Grace <= 0 {
		o.Grace = defaultGrace
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.KeptStopped <= 0 {
		o.KeptStopped = defaultKeptStopped
	}
	if o.NewRequester == nil {
		logger := o.Logger
		o.NewRequester = func(t config.Target, p config.Probe) (Sender, error) {
			r, err := client.New(t, p, client.Options{Logger: logger})
			if err != nil {
				return nil, err
			}
			return r, nil
		}
	}
	e := &Engine{
		o:           o,
		sink:        sinks(o.Sinks),
		logger:      o.Logger,
		loops:       map[pairKey]*loop{},
		states:      map[pairKey]*pairState{},
		stoppedKeys: list.New(),
	}
	e.root, e.stopRoot = context.WithCancelCause(context.Background())
	return e
}

// Apply makes the running pairs those of cfg's static targets and
// gateways (config.Config.Pairs), as ApplyPairs does.
func (e *Engine) Apply(cfg *config.Config) error {
	if cfg == nil {
		return errors.New("apply config: nil config")
	}
	return e.ApplyPairs(cfg.Pairs())
}

// ApplyPairs makes the running pairs those given (config.Config.PairsWith
// resolves them with the current replicas). Unchanged pairs (same Key
// and Fingerprint) keep running with their state (sequence, arrival
// process); removed and changed pairs stop scheduling; a removed pair's
// in-flight requests get the grace period, then end cancelled/removed,
// while a changed pair's run to their own end; new and changed pairs
// start. A pair whose Sender cannot be built is not started
// (a changed pair keeps its previous configuration running) and is named
// in the returned joined error. The Sinks hear PairStopped for removed
// pairs, then PairStarted for started ones in config order, each before
// the pair's first offer; PairStopped for a removed pair comes once its
// last request has ended (probe.Sink).
func (e *Engine) ApplyPairs(pairs []config.Pair) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.stopped {
		return fmt.Errorf("apply config: %w", errEngineStopped)
	}
	e.stopRemoved(pairs)
	type starting struct {
		pair   config.Pair
		sender Sender
		old    *loop
	}
	var starts []starting
	var errs []error
	for _, p := range pairs {
		old := e.loops[p.Key]
		if old != nil && old.fingerprint == p.Fingerprint {
			continue
		}
		sender, err := e.o.NewRequester(p.Target, p.Probe)
		if err != nil {
			errs = append(errs, fmt.Errorf("start probe %s: %w", p.Key, err))
			if old != nil {
				e.logger.Warn("probe config change not applied, previous config keeps running", "target", p.Key.Target, "probe", p.Key.Probe, "err", err)
			}
			continue
		}
		starts = append(starts, starting{p, sender, old})
	}
	// Every sink knows a pair before its loop can offer, and a new pair's
	// first planned time is not before the sinks added it.
	for _, s := range starts {
		e.sink.PairStarted(s.pair)
	}
	start := e.o.Now()
	for _, s := range starts {
		if s.old != nil {
			e.retire(s.old, false)
		}
		e.loops[s.pair.Key] = e.startLoop(s.pair, s.sender, start)
	}
	return errors.Join(errs...)
}

// stopRemoved retires the loops of pairs that are not in pairs, in name
// order; the Sinks hear PairStopped when their requests have ended
// (drain); e.mu is held.
func (e *Engine) stopRemoved(pairs []config.Pair) {
	wanted := make(map[pairKey]bool, len(pairs))
	for _, p := range pairs {
		wanted[p.Key] = true
	}
	var removed []pairKey
	for key := range e.loops {
		if !wanted[key] {
			removed = append(removed, key)
		}
	}
	slices.SortFunc(removed, func(a, b pairKey) int { return strings.Compare(a.String(), b.String()) })
	for _, key := range removed {
		l := e.loops[key]
		delete(e.loops, key)
		l.state.fingerprints = nil
		e.retire(l, true)
	}
}

// inFlight returns how many requests of the pair are outstanding, those of
// a previous configuration of the same pair included.
func (e *Engine) inFlight(target, probeName string) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	if st := e.states[pairKey{Target: target, Probe: probeName}]; st != nil {
		return int(st.inFlight.Load())
	}
	return 0
}

// ProbeOnce sends one request of a running pair (a static target's, a
// gateway's or a discovered replica's) synchronously, for the /probe
// endpoint. It is not offered, counted, written to the ledger or kept in
// history. A pair that does not run gives ErrUnknownPair.
func (e *Engine) ProbeOnce(ctx context.Context, key config.PairKey) (*probe.Result, error) {
	e.mu.Lock()
	if e.stopped {
		e.mu.Unlock()
		return nil, fmt.Errorf("probe %s: %w", key, errEngineStopped)
	}
	l := e.loops[key]
	if l == nil {
		e.mu.Unlock()
		return nil, fmt.Errorf("probe %s: %w", key, ErrUnknownPair)
	}
	// Registered before the pair can be retired, so its Sender stays open.
	l.reqs.Add(1)
	e.requests.Add(1)
	e.mu.Unlock()
	defer e.requests.Done()
	defer l.reqs.Done()

	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stop := context.AfterFunc(l.reqCtx, func() { cancel(context.Cause(l.reqCtx)) })
	defer stop()
	res := &probe.Result{Target: key.Target, Probe: key.Probe, Replica: key.Replica, Scheduled: e.o.Now()}
	sendSafely(ctx, e.logger, res, l.sender.Do)
	return res, nil
}

// Shutdown stops scheduling, lets in-flight requests finish for the grace
// period (or until ctx ends), then cancels the rest with ErrShutdown and
// waits for them. After it returns there are no more Sink calls; it stops
// no running pair in the Sinks (a removed pair still draining gets its
// PairStopped before it returns) and closes no Ledger. Later calls wait
// for the first.
// ctx only shortens the grace period: Shutdown always waits for every
// request to end (Senders return promptly once cancelled) and returns nil.
func (e *Engine) Shutdown(ctx context.Context) error {
	e.shutdownOnce.Do(func() { e.shutdown(ctx) })
	return nil
}

func (e *Engine) shutdown(ctx context.Context) {
	e.mu.Lock()
	e.stopped = true
	// The loops stay in e.loops: a drain ending now must not take a
	// running pair for a removed one.
	loops := slices.Collect(maps.Values(e.loops))
	e.mu.Unlock()
	for _, l := range loops {
		l.stopSched()
	}
	for _, l := range loops {
		<-l.done
	}
	idle := waitChan(&e.requests)
	e.awaitGrace(idle, ctx.Done())
	e.stopRoot(probe.ErrShutdown)
	<-idle
	e.drains.Wait()
	for _, l := range loops {
		l.sender.Close()
	}
	e.logger.Info("probe engine stopped", "pairs", len(loops))
}

// awaitGrace returns when idle is closed, the grace period has passed or
// stop is closed, whichever comes first.
func (e *Engine) awaitGrace(idle, stop <-chan struct{}) {
	grace := time.NewTimer(e.o.Grace)
	defer grace.Stop()
	select {
	case <-idle:
	case <-grace.C:
	case <-stop:
	}
}

// waitChan returns a channel closed when wg's counter reaches zero.
func waitChan(wg *sync.WaitGroup) <-chan struct{} {
	c := make(chan struct{})
	go func() {
		wg.Wait()
		close(c)
	}()
	return c
}
