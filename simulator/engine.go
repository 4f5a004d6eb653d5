package simulator

import (
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vllm-prober/vllm-prober/simulator/textgen"
)

// resyncAfter is how far behind its planned step start the engine may fall
// before it stops catching up and plans from the current time.
const resyncAfter = 50 * time.Millisecond

// output is one streamable piece of a sequence: the tokens produced since
// the previous output (stream_interval many, or fewer at the first token
// and at the finish).
type output struct {
	choice int
	text   string
	tokens int    // tokens in this output
	total  int    // completion tokens of the choice so far
	finish string // "" until the last output of the choice
	at     time.Time
	timing seqTiming // set on the last output
}

// seqTiming holds the engine-side timestamps of a sequence.
type seqTiming struct {
	arrival, queued, scheduled, firstToken, lastToken time.Time
}

// sink collects the outputs of one HTTP request's sequences.
type sink struct {
	mu     sync.Mutex
	outs   []output
	notify chan struct{}
}

func newSink() *sink { return &sink{notify: make(chan struct{}, 1)} }

func (k *sink) push(o output) {
	k.mu.Lock()
	k.outs = append(k.outs, o)
	k.mu.Unlock()
	select {
	case k.notify <- struct{}{}:
	default:
	}
}

func (k *sink) take() []output {
	k.mu.Lock()
	defer k.mu.Unlock()
	out := k.outs
	k.outs = nil
	return out
}

// seq is one sequence in the engine (one prompt of one request).
type seq struct {
	choice       int
	promptIDs    []int
	maxTokens    int // effective max_tokens, for the params histogram
	minTokens    int
	ignoreEOS    bool
	question     string // what the answer rule reads
	target       int
	finishReason string
	gen          *textgen.Generation
	sink         *sink
	aborted      atomic.Bool

	// Engine-goroutine state.
	generated    int
	prefilled    bool
	pendingText  []byte
	pendingCount int
	timing       seqTiming
}

func (s *seq) kvTokens() int { return len(s.promptIDs) + s.generated }

// engine is the step-based batch scheduler: a single goroutine that admits
// waiting sequences into a bounded running batch, sleeps until the step's
// absolute deadline and then gives every sequence of the step one token
// stamped with that deadline.
type engine struct {
	o       Options
	met     *serverMetrics
	prefix  *prefixCache
	rng     *rand.Rand // jitter; engine goroutine only
	wake    chan struct{}
	stop    chan struct{}
	stopped chan struct{}

	mu      sync.Mutex
	waiting []*seq
	running []*seq
	kvUsed  int
}

func newEngine(o Options, met *serverMetrics) *engine {
	return &engine{
		o:       o,
		met:     met,
		prefix:  newPrefixCache(o.PrefixCaching),
		rng:     rand.New(rand.NewPCG(uint64(o.Seed), 0xe9)),
		wake:    make(chan struct{}, 1),
		stop:    make(chan struct{}),
		stopped: make(chan struct{}),
	}
}

// submit queues sequences; they are admitted at the next step boundary.
func (e *engine) submit(ss ...*seq) {
	now := time.Now()
	e.mu.Lock()
	for _, s := range ss {
		s.timing.queued = now
		e.waiting = append(e.waiting, s)
	}
	e.mu.Unlock()
	select {
	case e.wake <- struct{}{}:
	default:
	}
}

// abort marks sequences as aborted; the engine drops them at its next step.
func (e *engine) abort(ss ...*seq) {
	for _, s := range ss {
		s.aborted.Store(true)
	}
	select {
	case e.wake <- struct{}{}:
	default:
	}
}

func (e *engine) close() {
	close(e.stop)
	<-e.stopped
}

// step is the work of one engine iteration.
type step struct {
	seqs          []*seq // prefills and decodes
	prefillTokens int
	decodes       int
}

func (e *engine) run() {
	defer close(e.stopped)
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	var next time.Time // planned start of the next step; zero when idle
	for {
		st := e.plan()
		if len(st.seqs) == 0 {
			next = time.Time{}
			select {
			case <-e.wake:
				continue
			case <-e.stop:
				return
			}
		}
		start := stepStart(st, next, time.Now())
		e.markScheduled(st, start)
		deadline := start.Add(e.duration(st))
		if !e.sleepUntil(deadline, timer) {
			return
		}
		e.complete(st, deadline)
		next = deadline
	}
}

// stepStart is when a step begins: the previous step's deadline while the
// engine keeps up, or, when it was idle, the moment the newest admitted
// request was queued, so the engine's own wake-up latency is not counted.
func stepStart(st step, next, now time.Time) time.Time {
	if !next.IsZero() {
		if now.Sub(next) < resyncAfter {
			return next
		}
		return now
	}
	start := time.Time{}
	for _, s := range st.seqs {
		if s.timing.queued.After(start) {
			start = s.timing.queued
		}
	}
	if start.IsZero() || start.After(now) {
		return now
	}
	return start
}

// precisionWindow is the last stretch before a deadline that the engine
// sleeps with a nanosleep syscall instead of a runtime timer: an idle Go
// process waits for timers in epoll with millisecond granularity, which
// would make events up to a millisecond late (two give headroom for a
// late timer on a busy machine).
const precisionWindow = 2 * time.Millisecond

// sleepUntil waits for deadline without spinning: a runtime timer until
// precisionWindow before it, then one short blocking syscall. It returns
// false when the engine is stopped.
func (e *engine) sleepUntil(deadline time.Time, timer *time.Timer) bool {
	if d := time.Until(deadline) - precisionWindow; d > 0 {
		timer.Reset(d)
		select {
		case <-timer.C:
		case <-e.stop:
			return false
		}
	}
	if d := time.Until(deadline); d > 0 {
		sleepShort(d)
	}
	return true
}

// duration is the modelled length of a step.
func (e *engine) duration(st step) time.Duration {
	var d time.Duration
	if st.prefillTokens > 0 {
		d += e.o.PrefillBase + time.Duration(st.prefillTokens)*e.o.PrefillPerToken
	}
	if st.decodes > 0 {
		d += e.o.DecodeBase + time.Duration(st.decodes)*e.o.DecodePerSeq
	}
	if e.o.Jitter > 0 {
		d = time.Duration(float64(d) * (1 + e.o.Jitter*(2*e.rng.Float64()-1)))
	}
	return d
}

func (e *engine) markScheduled(st step, start time.Time) {
	for _, s := range st.seqs {
		if s.timing.scheduled.IsZero() {
			// A request queued just after the planned start (while the
			// engine was waking) is scheduled when it was queued.
			s.timing.scheduled = start
			if s.timing.queued.After(start) {
				s.timing.scheduled = s.timing.queued
			}
		}
	}
}
