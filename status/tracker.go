// Package status keeps the short-term view of every (target, probe) pair
// that the status page and the demo's terminal summary show: counts since
// start and rates and percentiles over a recent window.
package status

import (
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/vllm-prober/vllm-prober/config"
	"github.com/vllm-prober/vllm-prober/probe"
)

// TrackerOptions configures a Tracker.
type TrackerOptions struct {
	// Window is how far back rates and percentiles look; 0 means 5m.
	Window time.Duration
	// MaxSamples bounds the requests and the ITLs kept per pair in the
	// window, the newest; 0 = 20000.
	MaxSamples int
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Tracker is a probe.Sink that keeps per-pair statistics.
type Tracker struct {
	opts  TrackerOptions
	mu    sync.Mutex
	pairs map[pairKey]*pairState
	order []pairKey
}

type pairKey = config.PairKey

type pairState struct {
	added        time.Time // when the pair started (PairStarted)
	objective    float64
	offered      uint64
	inFlight     int64
	abandoned    uint64 // since start (probe.Result.Abandoned)
	dispositions map[probe.Disposition]uint64
	window       window // the requests that ended within the window
	slo          config.SLO
	hour         timeline // the last hour per minute, for the charts
	recent       recentRing
}

// PairStats is a snapshot of one pair.
type PairStats struct {
	Target, Probe string
	Replica       string // a discovered replica's host:port; "" for a gateway or static target
	Objective     float64
	Offered       uint64
	InFlight      int64
	// Dispositions counts every finished request since start.
	Dispositions map[probe.Disposition]uint64
	// Window is the span the fields below cover: the tracker's window, or
	// the pair's age when it is younger, or, when more than MaxSamples
	// requests ended in the window, the span since the newest of those
	// left out ended (only the newest MaxSamples are kept).
	Window time.Duration
	// Goodput is accepted requests per second over the window.
	Goodput float64
	// Completed is requests the server completed (probe.Result.
	// ServerCompleted) per second over the window.
	Completed float64
	// Acceptance is accepted / (offered - abandoned) over the requests
	// that ended in the window: in-flight-cap cancellations, timeouts and
	// failures count in the denominator, only requests the prober gave up
	// for its own reasons (probe.Result.Abandoned) leave it. -1 when no
	// such request ended in the window.
	Acceptance float64
	// TTFT percentiles include client timeouts censored at the timeout
	// (probe.Result.ObservedTTFT).
	TTFTP50, TTFTP99 time.Duration
	ITLP50, ITLP99   time.Duration
	// TTFA percentiles, censored at the timeout as TTFT's are
	// (probe.Result.ObservedTTFA); 0 when no request answered.
	TTFAP50, TTFAP99   time.Duration
	WindowSamplesTTFA  int
	WindowSamplesTTFT  int
	WindowSamplesITL   int
	AcceptedSinceStart uint64
	// AbandonedSinceStart counts the requests the prober gave up for its
	// own reasons since start (probe.Result.Abandoned).
	AbandonedSinceStart uint64
	// SLO is the probe's latency objectives, drawn on the charts.
	SLO config.SLO
	// Minutes is the last hour, oldest first, ending with the current
	// minute; HourDispositions counts its requests by disposition. Both
	// are nil in a Snapshot of more than MaxChartPairs pairs, whose charts
	// the status page does not draw.
	Minutes          []MinuteStats
	HourDispositions map[probe.Disposition]uint64
}

// AcceptanceSinceStart is accepted / (offered - abandoned) over every
// request that ended since start; -1 when none did. Requests in flight
// are not counted yet.
func (p PairStats) AcceptanceSinceStart() float64 {
	var ended uint64
	for _, n := range p.Dispositions {
		ended += n
	}
	if ended <= p.AbandonedSinceStart {
		return -1
	}
	return float64(p.AcceptedSinceStart) / float64(ended-p.AbandonedSinceStart)
}

// DispositionCount is a disposition with its count.
type DispositionCount struct {
	Disposition probe.Disposition
	Count       uint64
}

// NotAccepted returns the non-zero counts of every disposition other than
// accepted, in judge order.
func (p PairStats) NotAccepted() []DispositionCount {
	var out []DispositionCount
	for _, d := range probe.Dispositions {
		if n := p.Dispositions[d]; n > 0 && d != probe.Accepted {
			out = append(out, DispositionCount{d, n})
		}
	}
	return out
}

// NewTracker returns an empty Tracker; the engine starts its pairs
// (probe.Sink).
func NewTracker(o TrackerOptions) *Tracker {
	if o.Window <= 0 {
		o.Window = 5 * time.Minute
	}
	if o.MaxSamples <= 0 {
		o.MaxSamples = 20000
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Tracker{opts: o, pairs: map[pairKey]*pairState{}}
}

// PairStarted implements probe.Sink: a new pair is tracked from now on,
// after those already tracked; a changed one keeps its state and takes
// its new objective.
func (t *Tracker) PairStarted(p config.Pair) {
	k := p.Key
	t.mu.Lock()
	defer t.mu.Unlock()
	st := t.pairs[k]
	if st == nil {
		st = &pairState{added: t.opts.Now(), dispositions: map[probe.Disposition]uint64{}}
		t.pairs[k] = st
		t.order = insertGrouped(t.order, k)
	}
	st.objective, st.slo = p.Probe.Objective, p.Probe.SLO
}

// PairStopped implements probe.Sink: the pair and its state go.
func (t *Tracker) PairStopped(key config.PairKey) {
	k := key
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.pairs, k)
	t.order = slices.DeleteFunc(t.order, func(o pairKey) bool { return o == k })
}

// Window returns the span of the windowed statistics.
func (t *Tracker) Window() time.Duration { return t.opts.Window }

// Offered implements probe.Sink.
func (t *Tracker) Offered(key config.PairKey) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if st := t.pairs[key]; st != nil {
		st.offered++
		st.inFlight++
	}
}

// Finished implements probe.Sink.
func (t *Tracker) Finished(r *probe.Result) {
	now := t.opts.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	st := t.pairs[r.Key()]
	if st == nil {
		return // a pair removed by a reload; the ledger still has it
	}
	if !r.Scheduled.IsZero() && r.Scheduled.Before(st.added) {
		return // offered before a reload removed the pair and one added it again
	}
	st.inFlight--
	st.dispositions[r.Disposition]++
	if r.Abandoned() {
		st.abandoned++
	}
	// Pruned here too, not only when the page is viewed: otherwise samples
	// older than the window pile up to MaxSamples on an unwatched prober.
	st.prune(now.Add(-t.opts.Window))
	st.window.add(now.Sub(st.added), r, t.opts.MaxSamples)
	st.hour.record(now, r)
	st.recent.add(r)
}

// Snapshot returns every pair's statistics in the order the pairs
// started: config order, with pairs a reload added at the end, except
// that a discovered replica's pair comes right after the other pairs of
// its target and probe (insertGrouped).
func (t *Tracker) Snapshot() []PairStats {
	now := t.opts.Now()
	since := now.Add(-t.opts.Window)
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]PairStats, 0, len(t.order))
	hour := len(t.order) <= MaxChartPairs
	for _, k := range t.order {
		out = append(out, t.pairStats(k, now, since, hour))
	}
	return out
}

// Pair returns one pair's statistics and its recent requests, newest
// first; ok is false when the pair is not running.
func (t *Tracker) Pair(k config.PairKey) (ps PairStats, recent []RequestView, ok bool) {
	now := t.opts.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	st := t.pairs[k]
	if st == nil {
		return PairStats{}, nil, false
	}
	return t.pairStats(k, now, now.Add(-t.opts.Window), true), st.recent.newestFirst(), true
}

// pairStats computes one pair's snapshot, with its last hour when hour is
// set; t.mu is held.
func (t *Tracker) pairStats(k pairKey, now, since time.Time, hour bool) PairStats {
	st := t.pairs[k]
	st.prune(since)
	ps := PairStats{
		Target: k.Target, Probe: k.Probe, Replica: k.Replica, Objective: st.objective,
		Offered: st.offered, InFlight: st.inFlight,
		Dispositions:        maps.Clone(st.dispositions),
		Window:              t.opts.Window,
		Acceptance:          -1,
		AcceptedSinceStart:  st.dispositions[probe.Accepted],
		AbandonedSinceStart: st.abandoned,
	}
	var accepted, judged, completed int
	for _, r := range st.window.requests {
		if r.flags&endedAccepted != 0 {
			accepted++
		}
		if r.flags&endedCompleted != 0 {
			completed++
		}
		if r.flags&endedAbandoned == 0 {
			judged++
		}
	}
	// A pair younger than the window is judged over its age, so rates
	// are right from the first minutes on; one that ended more than
	// MaxSamples requests in the window over the span its newest
	// MaxSamples cover (window.capped), so that its rates are its counts
	// over the time they were counted in.
	age := now.Sub(st.added)
	span := min(t.opts.Window, age, age-st.window.capped)
	ps.Window = span
	secs := max(span.Seconds(), 1)
	ps.Goodput, ps.Completed = float64(accepted)/secs, float64(completed)/secs
	if judged > 0 {
		ps.Acceptance = float64(accepted) / float64(judged)
	}
	ttft, ttfa, itl := st.window.samples()
	ps.TTFTP50, ps.TTFTP99 = windowQuantile(ttft, 0.5), windowQuantile(ttft, 0.99)
	ps.ITLP50, ps.ITLP99 = windowQuantile(itl, 0.5), windowQuantile(itl, 0.99)
	ps.TTFAP50, ps.TTFAP99 = windowQuantile(ttfa, 0.5), windowQuantile(ttfa, 0.99)
	ps.WindowSamplesTTFT, ps.WindowSamplesITL, ps.WindowSamplesTTFA = len(ttft), len(itl), len(ttfa)
	ps.SLO = st.slo
	if hour {
		ps.Minutes, ps.HourDispositions = st.hour.minutes(now, st.added)
	}
	return ps
}

func (st *pairState) prune(since time.Time) { st.window.prune(since.Sub(st.added)) }

// insertGrouped adds k to order after the pairs of its target and probe
// whose replica sorts before it (before the first of them when none does),
// or at the end for the first of its target and probe: a fleet's rows stay
// together, the gateway's first, whenever its replicas come and go.
func insertGrouped(order []pairKey, k pairKey) []pairKey {
	at, first := -1, -1
	for i, o := range order {
		if o.Target != k.Target || o.Probe != k.Probe {
			continue
		}
		if first < 0 {
			first = i
		}
		if o.Replica < k.Replica {
			at = i + 1
		}
	}
	switch {
	case at >= 0:
	case first >= 0:
		at = first
	default:
		at = len(order)
	}
	return slices.Insert(order, at, k)
}
