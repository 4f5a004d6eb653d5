// Package engine is the simulator's latency model: vLLM's step-based batch
// scheduler (a bounded running batch, a KV cache with recompute preemption,
// a prefix cache) and the vllm:* series vLLM's engine exports about it.
// The HTTP side hands it sequences and reads their outputs from a Sink.
package engine

import (
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"
)

// resyncAfter is how far behind its planned step start the engine may fall
// before it stops catching up and plans from the current time.
const resyncAfter = 50 * time.Millisecond

// Config is the engine's part of the simulator's options: batch and cache
// sizes and the cost of a step.
type Config struct {
	// MaxNumSeqs bounds the running batch; further requests wait in a queue.
	MaxNumSeqs int
	// StreamInterval is the number of tokens buffered per streamed event.
	StreamInterval int

	// PrefillBase and PrefillPerToken give the duration of an engine step
	// that prefills: PrefillBase + PrefillPerToken * uncached prompt tokens.
	PrefillBase, PrefillPerToken time.Duration
	// DecodeBase and DecodePerSeq give the duration of an engine step that
	// decodes: DecodeBase + DecodePerSeq * decoding sequences. A step that
	// both prefills and decodes takes the sum of both parts.
	DecodeBase, DecodePerSeq time.Duration
	// Jitter scales every step duration by a uniform factor in
	// [1-Jitter, 1+Jitter]; 0 turns it off.
	Jitter float64

	// PrefixCaching reuses the KV of identical leading 16-token blocks, which
	// shortens prefill (vLLM V1's default).
	PrefixCaching bool
	// KVCacheTokens is the KV cache capacity in tokens; sequences are
	// preempted when the running batch outgrows it.
	KVCacheTokens int
}

// Output is one streamable piece of a sequence: the tokens produced since
// the previous output (stream_interval many, or fewer at the first token
// and at the finish).
type Output struct {
	Choice int
	Text   string
	// Reasoning is the text of the output's reasoning tokens (the
	// sequence's first Seq.Reasoning tokens); Text holds the rest.
	Reasoning string
	Tokens    int    // tokens in this output
	Total     int    // completion tokens of the choice so far
	Finish    string // "" until the last output of the choice
	At        time.Time
	Timing    Timing // set on the last output
}

// Timing holds the engine-side timestamps of a sequence.
type Timing struct {
	Arrival, Queued, Scheduled, FirstToken, LastToken time.Time
}

// Sink collects the outputs of one HTTP request's sequences.
type Sink struct {
	mu     sync.Mutex
	outs   []Output
	notify chan struct{}
}

// NewSink returns an empty Sink.
func NewSink() *Sink { return &Sink{notify: make(chan struct{}, 1)} }

// Notify receives after outputs were added, at most one wake-up pending.
func (k *Sink) Notify() <-chan struct{} { return k.notify }

func (k *Sink) push(o Output) {
	k.mu.Lock()
	k.outs = append(k.outs, o)
	k.mu.Unlock()
	select {
	case k.notify <- struct{}{}:
	default:
	}
}

// Take returns the outputs added since the previous Take.
func (k *Sink) Take() []Output {
	k.mu.Lock()
	defer k.mu.Unlock()
	out := k.outs
	k.outs = nil
	return out
}

// Seq is one sequence in the engine (one prompt of one request). The
// caller sets the exported fields before Submit and leaves them alone
// afterwards.
type Seq struct {
	Choice       int
	PromptIDs    []int
	MaxTokens    int // effective max_tokens, for the params histogram
	Target       int // tokens to generate
	FinishReason string
	Text         func(i int) string // the text of output token i, asked in order
	// Reasoning is how many leading tokens are reasoning: their text goes
	// to Output.Reasoning. They are generated tokens like any other for
	// the engine and its metrics, as in vLLM, whose reasoning parser runs
	// in the frontend.
	Reasoning int
	// Pooling marks an embedding request: it is admitted and prefilled
	// like any sequence, then finishes in that step without generating a
	// token (Target and Text are unused).
	Pooling bool
	Sink    *Sink
	Arrival time.Time // when the request arrived
	aborted atomic.Bool

	// Engine-goroutine state.
	generated    int
	prefilled    bool
	pendingText  []byte
	pendingReasn []byte
	pendingCount int
	timing       Timing
}

func (s *Seq) kvTokens() int { return len(s.PromptIDs) + s.generated }

// Engine is the step-based batch scheduler: a single goroutine that admits
// waiting sequences into a bounded running batch, sleeps until the step's
// absolute deadline and then gives every sequence of the step one token
// stamped with that deadline.
type Engine struct {
	c       Config
	met     *Metrics
	prefix  *prefixCache
	rng     *rand.Rand // jitter; engine goroutine only
	wake    chan struct{}
	stop    chan struct{}
	stopped chan struct{}

	mu      sync.Mutex
	waiting []*Seq
	running []*Seq
	kvUsed  int
}

// New returns an engine with config c that updates met; seed makes its
// jitter deterministic. Run runs it.
func New(c Config, seed int64, met *Metrics) *Engine {
	return &Engine{
		c:       c,
		met:     met,
		prefix:  newPrefixCache(c.PrefixCaching),
		rng:     rand.New(rand.NewPCG(uint64(seed), 0xe9)),
		wake:    make(chan struct{}, 1),
		stop:    make(chan struct{}),
		stopped: make(chan struct{}),
	}
}

// Submit queues sequences; they are admitted at the next step boundary.
func (e *Engine) Submit(ss ...*Seq) {
	now := time.Now()
	e.mu.Lock()
	for _, s := range ss {
		s.timing.Arrival = s.Arrival
		s.timing.Queued = now
		e.waiting = append(e.waiting, s)
	}
	e.mu.Unlock()
	select {
	case e.wake <- struct{}{}:
	default:
	}
}

// Abort marks sequences as aborted; the engine drops them at its next step.
func (e *Engine) Abort(ss ...*Seq) {
	for _, s := range ss {
		s.aborted.Store(true)
	}
	select {
	case e.wake <- struct{}{}:
	default:
	}
}

// Close stops Run and waits for it to return.
func (e *Engine) Close() {
	close(e.stop)
	<-e.stopped
}

// step is the work of one engine iteration.
type step struct {
	seqs          []*Seq // prefills and decodes
	prefillTokens int
	decodes       int
}

// Run runs steps until Close, sleeping while no sequence is waiting or
// running.
func (e *Engine) Run() {
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
		if s.timing.Queued.After(start) {
			start = s.timing.Queued
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
func (e *Engine) sleepUntil(deadline time.Time, timer *time.Timer) bool {
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
func (e *Engine) duration(st step) time.Duration {
	var d time.Duration
	if st.prefillTokens > 0 {
		d += e.c.PrefillBase + time.Duration(st.prefillTokens)*e.c.PrefillPerToken
	}
	if st.decodes > 0 {
		d += e.c.DecodeBase + time.Duration(st.decodes)*e.c.DecodePerSeq
	}
	if e.c.Jitter > 0 {
		d = time.Duration(float64(d) * (1 + e.c.Jitter*(2*e.rng.Float64()-1)))
	}
	return d
}

func (e *Engine) markScheduled(st step, start time.Time) {
	for _, s := range st.seqs {
		if s.timing.Scheduled.IsZero() {
			// A request queued just after the planned start (while the
			// engine was waking) is scheduled when it was queued.
			s.timing.Scheduled = start
			if s.timing.Queued.After(start) {
				s.timing.Scheduled = s.timing.Queued
			}
		}
	}
}
