package status

import (
	"math"
	"slices"
	"time"

	"github.com/vllm-prober/vllm-prober/internal/quantile"
	"github.com/vllm-prober/vllm-prober/probe"
)

// compactDuration is a non-negative duration in 4 bytes: exact to the
// nanosecond below 2^31 ns (~2.1 s), to the microsecond above, up to
// ~35 minutes, where it saturates. Latencies longer than 2.1 s lose under
// a microsecond, which changes the pages' milliseconds (one decimal) only
// for a value within a microsecond above a rounding boundary. Encoding
// keeps the order, so a nearest-rank quantile is the same request's value.
type compactDuration uint32

const (
	compactMicros = 1 << 31                         // the flag of a value in microseconds
	noDuration    = compactDuration(math.MaxUint32) // no value (a request without TTFT)
)

func compact(d time.Duration) compactDuration {
	switch {
	case d <= 0:
		return 0
	case d < compactMicros:
		return compactDuration(d)
	}
	return compactDuration(compactMicros | min(d/time.Microsecond, compactMicros-2))
}

func (c compactDuration) duration() time.Duration {
	if c&compactMicros == 0 {
		return time.Duration(c)
	}
	return time.Duration(c&^compactMicros) * time.Microsecond
}

// windowRequest is one request that ended within the window, with what
// the windowed accounting needs (probe.Result.Abandoned, ServerCompleted)
// and its samples: its ITLs are the next itls of the window's itl slice,
// all taken when it ended. 24 bytes and 4 a gap, where a time.Time and a
// 16-byte sample per latency cost ~4 KiB a lean pair's window.
type windowRequest struct {
	at         time.Duration // when it ended, since the pair started
	ttft, ttfa compactDuration
	itls       uint32 // how many of the window's ITLs are this request's
	flags      uint8
}

const (
	endedAccepted = 1 << iota
	endedAbandoned
	endedCompleted
)

// window holds the requests that ended within the tracker's window, oldest
// first, and their ITLs in the same order.
type window struct {
	requests []windowRequest
	itl      []compactDuration
	// capped is when the newest request the limit dropped ended (since the
	// pair started; 0 while none was): the requests kept are all those
	// that ended after it, so counts over them are rates over the span
	// from it (Tracker.pairStats).
	capped time.Duration
}

// add appends a request that ended at (since the pair started), keeping
// at most limit requests and limit ITLs, the newest.
func (w *window) add(at time.Duration, r *probe.Result, limit int) {
	wr := windowRequest{at: at, ttft: noDuration, ttfa: noDuration, itls: uint32(min(len(r.ITLs), math.MaxUint32))}
	if r.Disposition == probe.Accepted {
		wr.flags |= endedAccepted
	}
	if r.Abandoned() {
		wr.flags |= endedAbandoned
	}
	if r.ServerCompleted() {
		wr.flags |= endedCompleted
	}
	if d, ok := r.ObservedTTFT(); ok {
		wr.ttft = compact(d)
	}
	if d, ok := r.ObservedTTFA(); ok {
		wr.ttfa = compact(d)
	}
	w.requests = append(w.requests, wr)
	for _, g := range r.ITLs[len(r.ITLs)-int(wr.itls):] {
		w.itl = append(w.itl, compact(g))
	}
	if n := len(w.requests) - limit; n > 0 {
		w.capped = max(w.capped, w.requests[n-1].at)
		w.drop(n)
	}
	if n := len(w.itl) - limit; n > 0 {
		w.itl = w.itl[:copy(w.itl, w.itl[n:])]
		for i := 0; n > 0 && i < len(w.requests); i++ { // the oldest requests lose those ITLs
			k := min(uint32(n), w.requests[i].itls)
			w.requests[i].itls -= k
			n -= int(k)
		}
	}
}

// prune drops the requests that ended before cut (since the pair started).
func (w *window) prune(cut time.Duration) {
	i := 0
	for i < len(w.requests) && w.requests[i].at < cut {
		i++
	}
	w.drop(i)
}

// drop removes the n oldest requests and their ITLs, moving the rest to
// the front of the same arrays: they stay as large as the most the window
// held at once, where reslicing would leave the dropped ones in front
// until append copies the rest into arrays twice their number. An empty
// window lets its arrays go.
func (w *window) drop(n int) {
	if n == 0 {
		return
	}
	gaps := 0
	for _, r := range w.requests[:n] {
		gaps += int(r.itls)
	}
	w.requests = w.requests[:copy(w.requests, w.requests[n:])]
	w.itl = w.itl[:copy(w.itl, w.itl[gaps:])]
	if len(w.requests) == 0 {
		w.requests, w.itl = nil, nil
	}
}

// windowQuantile returns the q-quantile (nearest rank: a latency some
// request saw) of the values, or 0.
func windowQuantile(vs []time.Duration, q float64) time.Duration {
	if len(vs) == 0 {
		return 0
	}
	slices.Sort(vs)
	return quantile.NearestRank(vs, q)
}

// samples returns the window's TTFTs, TTFAs and ITLs.
func (w *window) samples() (ttft, ttfa, itl []time.Duration) {
	for _, r := range w.requests {
		if r.ttft != noDuration {
			ttft = append(ttft, r.ttft.duration())
		}
		if r.ttfa != noDuration {
			ttfa = append(ttfa, r.ttfa.duration())
		}
	}
	itl = make([]time.Duration, len(w.itl))
	for i, g := range w.itl {
		itl[i] = g.duration()
	}
	return ttft, ttfa, itl
}
