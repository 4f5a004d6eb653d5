package status

import (
	"cmp"
	"math"
	"slices"
	"time"

	"github.com/vllm-prober/vllm-prober/probe"
)

// The status page's charts cover the last hour in fixed per-minute buckets,
// so a pair's memory is bounded whatever its rate (docs/design.md, section
// "Status page"): timelineMinutes buckets, each with fixed latency
// histograms.
const timelineMinutes = 60

// Latency histograms have histPerDoubling log-spaced buckets per doubling
// from histMin up: bucket i (i ≥ 1) holds (histMin·2^((i-1)/8),
// histMin·2^(i/8)], bucket 0 everything up to histMin and the last
// everything above histMin·2^((histBuckets-2)/8) ≈ 200 s. A quantile is
// reported as its bucket's geometric midpoint, within 2^(1/16)-1 ≈ 4.4%
// of the exact nearest-rank value inside that range.
const (
	histMin         = 100 * time.Microsecond
	histPerDoubling = 8
	histBuckets     = 21*histPerDoubling + 2
)

// latencyHist counts latencies in the buckets above. It holds only the
// buckets that counted something, in order: a minute of a pair at a low
// rate touches a few of them, so a pair's hour costs a few KiB rather
// than the ~80 KiB of every bucket of every minute. Each counted bucket
// is one uint32, its index in the top 8 bits (histBuckets < 256) and its
// count in the low 24: one slice of 4-byte entries, not a slice of indexes
// and one of counts (~3 KiB less a pair's hour). A count stops at
// histCountMax, ~280,000 latencies a second into one bucket of one pair
// for a minute, beyond what one pair's streams send.
type latencyHist struct {
	counts []uint32 // bucket index << 24 | count, ascending
}

const histCountMax = 1<<24 - 1

func histEntryIndex(e uint32) int { return int(e >> 24) }

func histIndex(d time.Duration) int {
	if d <= histMin {
		return 0
	}
	i := int(math.Ceil(math.Log2(float64(d)/float64(histMin)) * histPerDoubling))
	return min(max(i, 1), histBuckets-1)
}

// histValue is the value reported for bucket i: its geometric midpoint.
func histValue(i int) time.Duration {
	if i == 0 {
		return histMin
	}
	return time.Duration(float64(histMin) * math.Exp2((float64(i)-0.5)/histPerDoubling))
}

func (h *latencyHist) add(d time.Duration) {
	i := histIndex(d)
	j, found := slices.BinarySearchFunc(h.counts, i, func(e uint32, i int) int { return cmp.Compare(histEntryIndex(e), i) })
	if !found {
		h.counts = slices.Insert(h.counts, j, uint32(i)<<24|1)
	} else if h.counts[j]&histCountMax < histCountMax {
		h.counts[j]++
	}
}

// reset empties h, keeping its memory for the next minute.
func (h *latencyHist) reset() { h.counts = h.counts[:0] }

// quantile returns the nearest-rank q-quantile of the counts in hs, or 0
// when they hold none.
func quantileOf(q float64, hs ...*latencyHist) time.Duration {
	var n uint64
	for _, h := range hs {
		for _, e := range h.counts {
			n += uint64(e & histCountMax)
		}
	}
	if n == 0 {
		return 0
	}
	rank := max(uint64(math.Ceil(q*float64(n))), 1)
	var seen uint64
	next := make([]int, len(hs)) // each h's first bucket not yet counted
	for i := range histBuckets {
		for k, h := range hs {
			if next[k] < len(h.counts) && histEntryIndex(h.counts[next[k]]) == i {
				seen += uint64(h.counts[next[k]] & histCountMax)
				next[k]++
			}
		}
		if seen >= rank {
			return histValue(i)
		}
	}
	return histValue(histBuckets - 1)
}

// minuteBucket holds the requests that ended in one wall-clock minute.
type minuteBucket struct {
	minute                             int64 // Unix time / 60
	ended, accepted, judged, completed uint32
	dispositions                       [8]uint32 // by index in probe.Dispositions
	ttft, itl                          latencyHist
}

// timeline holds the last hour of a pair, oldest first: the minutes in
// which a request of it ended, so a new or idle pair holds a few rather
// than the hour's 60. The newest minutes are buckets a request can still
// be counted in (bucket); older ones are sealed into a compact encoding.
type timeline struct {
	sealed  sealedMinutes  // minutes before every bucket's
	buckets []minuteBucket // ascending minute, the newest two (three when the clock skews)
}

func (tl *timeline) search(m int64) (int, bool) {
	return slices.BinarySearchFunc(tl.buckets, m, func(b minuteBucket, m int64) int { return cmp.Compare(b.minute, m) })
}

// bucket returns the bucket of minute m, adding it when it is new. The
// minutes outside the hour ending at m go (an hour or more before it, or
// more than a minute after it when the clock went back), so at most
// timelineMinutes+1 stay. The minute before m stays a bucket, and so does
// the one after it: Finished reads the clock before it takes the
// tracker's lock, so a request that ended at 12:00:59.9 may be counted
// after one that ended at 12:01:00.0, and must not drop its minute. Older
// buckets are sealed; a sealed bucket's histogram memory serves the new
// one.
func (tl *timeline) bucket(m int64) *minuteBucket {
	if i, ok := tl.search(m); ok {
		return &tl.buckets[i]
	}
	from, to := m-timelineMinutes+1, m+1
	tl.sealed.dropOutside(from, to)
	if tl.sealed.last >= m-1 && len(tl.sealed.buf) > 0 {
		// The clock went back: the sealed minutes from m-1 on are buckets again.
		tl.buckets = slices.Insert(tl.buckets, 0, tl.sealed.popFrom(m-1, nil)...)
	}
	nb := minuteBucket{minute: m}
	tl.buckets = slices.DeleteFunc(tl.buckets, func(b minuteBucket) bool {
		gone := b.minute < from || b.minute > to
		if b.minute < m-1 && !gone {
			tl.sealed.add(&b)
		}
		if (gone || b.minute < m-1) && cap(nb.ttft.counts) == 0 {
			nb.ttft, nb.itl = b.ttft, b.itl
			nb.ttft.reset()
			nb.itl.reset()
		}
		return gone || b.minute < m-1
	})
	i, found := tl.search(m) // found when the clock went back to a sealed minute
	if !found {
		tl.buckets = insertBounded(tl.buckets, i, nb, 3)
	}
	return &tl.buckets[i]
}

// insertBounded inserts v at index i of s, growing s by doubling up to
// limit elements rather than append's growth past it: a full hour or
// recent ring holds exactly its limit.
func insertBounded[T any](s []T, i int, v T, limit int) []T {
	if len(s) == cap(s) {
		grown := make([]T, len(s), max(min(2*cap(s), limit), len(s)+1, 1))
		copy(grown, s)
		s = grown
	}
	return slices.Insert(s, i, v)
}

// record counts a finished request in the minute of now, by the same
// definitions as the windowed table (finish).
func (tl *timeline) record(now time.Time, r *probe.Result) {
	b := tl.bucket(now.Unix() / 60)
	b.ended++
	if r.Disposition == probe.Accepted {
		b.accepted++
	}
	if !r.Abandoned() {
		b.judged++
	}
	if r.ServerCompleted() {
		b.completed++
	}
	if i := slices.Index(probe.Dispositions, r.Disposition); i >= 0 && i < len(b.dispositions) {
		b.dispositions[i]++
	}
	if d, ok := r.ObservedTTFT(); ok {
		b.ttft.add(d)
	}
	for _, g := range r.ITLs {
		b.itl.add(g)
	}
}

// MinuteStats is one minute of a pair's last hour.
type MinuteStats struct {
	Start time.Time
	// Running is whether the pair ran during the minute; the fields below
	// are zero (acceptance -1) when it did not.
	Running bool
	// Ran is how long the pair ran in the minute so far: less than a
	// minute for its first one and for the current one.
	Ran time.Duration
	// Ended counts the requests that ended in the minute, shed and failed
	// ones included; Accepted those accepted.
	Ended, Accepted int
	// Acceptance is accepted / (ended - abandoned), -1 when none was
	// judged; Goodput is accepted per second of the minute the pair ran.
	Acceptance, Goodput      float64
	TTFTP50, TTFTP99, ITLP99 time.Duration // 0 = no sample
}

// minutes returns the last hour oldest first, one entry per minute up to
// the current one, and the dispositions of the whole hour. added is when
// the pair started: a partial first or current minute's goodput is over
// the seconds the pair ran in it.
func (tl *timeline) minutes(now, added time.Time) ([]MinuteStats, map[probe.Disposition]uint64) {
	cur := now.Unix() / 60
	first := cur - timelineMinutes + 1
	out := make([]MinuteStats, 0, timelineMinutes)
	for m := first; m <= cur; m++ {
		start := time.Unix(m*60, 0)
		ms := MinuteStats{Start: start, Acceptance: -1}
		ms.Running = start.Add(time.Minute).After(added)
		if ms.Running {
			ms.Ran = minTime(now, start.Add(time.Minute)).Sub(maxTime(start, added))
		}
		out = append(out, ms)
	}
	mix := map[probe.Disposition]uint64{}
	count := func(b *minuteBucket) {
		if b.minute < first || b.minute > cur {
			return
		}
		ms := &out[b.minute-first]
		ms.Ended, ms.Accepted = int(b.ended), int(b.accepted)
		if b.judged > 0 {
			ms.Acceptance = float64(b.accepted) / float64(b.judged)
		}
		ms.Goodput = float64(b.accepted) / max(ms.Ran.Seconds(), 1)
		ms.TTFTP50, ms.TTFTP99 = quantileOf(0.5, &b.ttft), quantileOf(0.99, &b.ttft)
		ms.ITLP99 = quantileOf(0.99, &b.itl)
		for i, d := range probe.Dispositions {
			if n := b.dispositions[i]; n > 0 {
				mix[d] += uint64(n)
			}
		}
	}
	var sealed minuteBucket
	for r := tl.sealed.reader(); r.next(&sealed); {
		count(&sealed)
	}
	for i := range tl.buckets {
		count(&tl.buckets[i])
	}
	return out, mix
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
