package schedule

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vllm-prober/vllm-prober/config"
	"github.com/vllm-prober/vllm-prober/internal/daemontest"
	"github.com/vllm-prober/vllm-prober/probe"
	"github.com/vllm-prober/vllm-prober/probe/client"
	"github.com/vllm-prober/vllm-prober/probe/ledger"
	"github.com/vllm-prober/vllm-prober/probe/ledger/ledgertest"
)

// testEpoch is the fake clock's start.
var testEpoch = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// fakeClock is a clock that moves only when the test advances it. Every
// Sleep parks until the next advance (or until its ctx ends), so once all
// loops are parked every planned time up to now has been fired.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	gen    int
	parked int
	wake   chan struct{}
}

func newFakeClock(start time.Time) *fakeClock {
	return &fakeClock{now: start, wake: make(chan struct{})}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	c.mu.Lock()
	c.parked++
	gen, wake := c.gen, c.wake
	c.mu.Unlock()
	select {
	case <-ctx.Done():
		c.mu.Lock()
		if c.gen == gen {
			c.parked--
		}
		c.mu.Unlock()
		return context.Cause(ctx)
	case <-wake:
		return nil
	}
}

// advance moves the clock by d and wakes every parked sleeper.
func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	c.gen++
	c.parked = 0
	close(c.wake)
	c.wake = make(chan struct{})
}

func (c *fakeClock) parkedCount() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.parked
}

// fakeSender ends a request at once, after delay, when released, or when
// its ctx ends (cancelled with the reason of the cause).
type fakeSender struct {
	key     pairKey
	hold    bool
	delay   time.Duration
	release chan struct{}
	calls   atomic.Int64
	closed  atomic.Bool
}

func (f *fakeSender) Do(ctx context.Context, res *probe.Result) {
	f.calls.Add(1)
	res.Sent = res.Scheduled
	if f.closed.Load() {
		res.Disposition, res.Error = probe.ServerFailure, "Do after Close"
		return
	}
	var timer <-chan time.Time
	if f.delay > 0 {
		timer = time.After(f.delay)
	} else if !f.hold {
		res.Disposition = probe.Accepted
		return
	}
	select {
	case <-timer:
		res.Disposition = probe.Accepted
	case <-f.release:
		res.Disposition = probe.Accepted
	case <-ctx.Done():
		res.Disposition = probe.Cancelled
		switch cause := context.Cause(ctx); {
		case errors.Is(cause, probe.ErrShutdown):
			res.Reason = probe.ReasonShutdown
		case errors.Is(cause, probe.ErrRemoved):
			res.Reason = probe.ReasonRemoved
		default:
			res.Reason = "other"
		}
	}
}

func (f *fakeSender) Close() { f.closed.Store(true) }

// senderFactory builds fakeSenders and remembers them.
type senderFactory struct {
	mu      sync.Mutex
	hold    bool
	delay   time.Duration
	release chan struct{}
	fail    map[string]error // by probe name
	built   []*fakeSender
	// prepareClock, when set, makes the senders Preparers
	// (preparingSender) that read the time from it.
	prepareClock func() time.Time
	preparing    []*preparingSender
}

func (sf *senderFactory) New(t config.Target, p config.Probe) (Sender, error) {
	sf.mu.Lock()
	defer sf.mu.Unlock()
	if err := sf.fail[p.Name]; err != nil {
		return nil, err
	}
	s := &fakeSender{key: pairKey{Target: t.Name, Probe: p.Name}, hold: sf.hold, delay: sf.delay, release: sf.release}
	sf.built = append(sf.built, s)
	if sf.prepareClock != nil {
		ps := &preparingSender{fakeSender: s, now: sf.prepareClock, prepared: map[*client.Prepared]preparation{}}
		sf.preparing = append(sf.preparing, ps)
		return ps, nil
	}
	return s, nil
}

// preparingSender is a fakeSender that is also a Preparer: it notes when
// (on the test's clock) it prepared which seq, and which preparation each
// request it sent used.
type preparingSender struct {
	*fakeSender
	now      func() time.Time
	mu       sync.Mutex
	prepared map[*client.Prepared]preparation
	sends    []preparedSend
}

// preparation is one Prepare call: the seq asked for, and when.
type preparation struct {
	seq uint64
	at  time.Time
}

// preparedSend is one DoPrepared call: the request's seq and the
// preparation it was given (ok false: none, or one this sender did not make).
type preparedSend struct {
	seq  uint64
	prep preparation
	ok   bool
}

func (s *preparingSender) Prepare(seq uint64) *client.Prepared {
	p := new(client.Prepared)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.prepared[p] = preparation{seq: seq, at: s.now()}
	return p
}

func (s *preparingSender) DoPrepared(ctx context.Context, res *probe.Result, p *client.Prepared) {
	s.mu.Lock()
	prep, ok := s.prepared[p]
	s.sends = append(s.sends, preparedSend{seq: res.Seq, prep: prep, ok: ok})
	s.mu.Unlock()
	s.fakeSender.Do(ctx, res)
}

// record returns how many requests s prepared and what it sent.
func (s *preparingSender) record() (prepares int, sends []preparedSend) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.prepared), slices.Clone(s.sends)
}

func (sf *senderFactory) senders(target, probeName string) []*fakeSender {
	sf.mu.Lock()
	defer sf.mu.Unlock()
	var out []*fakeSender
	for _, s := range sf.built {
		if s.key == (pairKey{Target: target, Probe: probeName}) {
			out = append(out, s)
		}
	}
	return out
}

// recSink counts Offered and keeps Finished results per pair, and
// flags calls made after it was closed.
type recSink struct {
	mu       sync.Mutex
	offered  map[pairKey]int
	finished map[pairKey][]*probe.Result
	closed   bool
	late     int
}

func newRecSink() *recSink {
	return &recSink{offered: map[pairKey]int{}, finished: map[pairKey][]*probe.Result{}}
}

func (l *recSink) PairStarted(config.Pair) {}

func (l *recSink) PairStopped(config.PairKey) {}

func (l *recSink) Offered(key config.PairKey) {
	target, probeName := key.Target, key.Probe
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		l.late++
	}
	l.offered[pairKey{Target: target, Probe: probeName}]++
}

func (l *recSink) Finished(r *probe.Result) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		l.late++
	}
	k := pairKey{Target: r.Target, Probe: r.Probe}
	l.finished[k] = append(l.finished[k], r)
}

func (l *recSink) counts(target, probeName string) (offered, finished int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	k := pairKey{Target: target, Probe: probeName}
	return l.offered[k], len(l.finished[k])
}

// results returns the finished results of a pair in seq order.
func (l *recSink) results(target, probeName string) []*probe.Result {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := append([]*probe.Result(nil), l.finished[pairKey{Target: target, Probe: probeName}]...)
	sortBySeq(out)
	return out
}

func sortBySeq(rs []*probe.Result) {
	for i := 1; i < len(rs); i++ {
		for j := i; j > 0 && rs[j].Seq < rs[j-1].Seq; j-- {
			rs[j], rs[j-1] = rs[j-1], rs[j]
		}
	}
}

func (l *recSink) close() (late int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = true
	return l.late
}

func (l *recSink) lateCalls() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.late
}

// waitFor polls cond for up to five seconds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	daemontest.Poll(t, 5*time.Second, time.Millisecond, what, cond)
}

// testConfig builds a config of targets and probes; every target runs
// every probe unless pairs restrict it.
func testConfig(targets []string, probes ...config.Probe) *config.Config {
	cfg := &config.Config{Probes: probes}
	for _, name := range targets {
		cfg.Targets = append(cfg.Targets, config.Target{Name: name, URL: "http://127.0.0.1:1"})
	}
	return cfg
}

func testProbe(name string, rate float64, maxInFlight int) config.Probe {
	return config.Probe{Name: name, API: config.APIChat, Rate: rate, Burstiness: 1, MaxInFlight: maxInFlight}
}

// harness is an engine on a fake clock with fake senders.
type harness struct {
	clock   *fakeClock
	factory *senderFactory
	sink    *recSink
	engine  *Engine
}

func newHarness(t *testing.T, sf *senderFactory, o EngineOptions) *harness {
	t.Helper()
	h := &harness{clock: newFakeClock(testEpoch), factory: sf, sink: newRecSink()}
	o.Now, o.Sleep, o.NewRequester = h.clock.Now, h.clock.Sleep, sf.New
	o.Sinks = append([]probe.Sink{h.sink}, o.Sinks...)
	if o.Grace == 0 {
		o.Grace = 20 * time.Millisecond
	}
	h.engine = NewEngine(o)
	t.Cleanup(func() { h.engine.Shutdown(context.Background()) })
	return h
}

// run waits until all n loops are parked, so none has read the clock
// without sleeping yet, advances fake time by d and waits until they have
// fired everything due and parked again.
func (h *harness) run(t *testing.T, d time.Duration, loops int) {
	t.Helper()
	waitFor(t, "loops to park", func() bool { return h.clock.parkedCount() == loops })
	h.clock.advance(d)
	waitFor(t, "loops to park", func() bool { return h.clock.parkedCount() == loops })
}

// StopAndReadLedger shuts e down, closes its ledger and returns the
// ledger's records, failing the test on a torn line. It is exported for
// the package's external tests.
func StopAndReadLedger(t *testing.T, e *Engine, lg *ledger.Ledger, path string) []ledger.Record {
	t.Helper()
	if err := e.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := lg.Close(); err != nil {
		t.Fatal(err)
	}
	return ledgertest.Read(t, path)
}
