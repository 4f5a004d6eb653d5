package status

import (
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
	"unsafe"

	"github.com/vllm-prober/vllm-prober/config"
	"github.com/vllm-prober/vllm-prober/internal/quantile"
	"github.com/vllm-prober/vllm-prober/probe"
)

// histError is the largest relative error of a reported quantile inside
// the histogram's range: half a bucket, 2^(1/16)-1.
var histError = math.Exp2(1.0/(2*histPerDoubling)) - 1

func TestHistIndexBoundaries(t *testing.T) {
	for _, c := range []struct {
		d    time.Duration
		want int
	}{
		{0, 0}, {histMin, 0}, {histMin + 1, 1},
		{2 * histMin, histPerDoubling},       // an upper bound belongs to its bucket
		{2*histMin + 1, histPerDoubling + 1}, // just above it to the next
		{time.Hour, histBuckets - 1},         // overflow
		{histMin << 21, histBuckets - 2},     // the last finite bound
		{histMin<<21 + time.Millisecond, histBuckets - 1},
	} {
		if got := histIndex(c.d); got != c.want {
			t.Errorf("histIndex(%v) = %d, want %d", c.d, got, c.want)
		}
	}
	if len(probe.Dispositions) > len(minuteBucket{}.dispositions) {
		t.Fatalf("%d dispositions, a minute bucket counts %d", len(probe.Dispositions), len(minuteBucket{}.dispositions))
	}
}

// TestHistQuantileError checks the stated error bound against the exact
// nearest-rank quantile of log-uniform latencies from 1ms to 30s.
func TestHistQuantileError(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{1, 7, 100, 5000} {
		var h latencyHist
		vs := make([]time.Duration, n)
		for i := range vs {
			vs[i] = time.Duration(float64(time.Millisecond) * math.Pow(30000, rng.Float64()))
			h.add(vs[i])
		}
		slices.Sort(vs)
		for _, q := range []float64{0, 0.5, 0.9, 0.99, 1} {
			exact, got := quantile.NearestRank(vs, q), quantileOf(q, &h)
			if rel := math.Abs(float64(got-exact)) / float64(exact); rel > histError {
				t.Errorf("n=%d q=%v: %v, exact %v: error %.2f%% > %.2f%%", n, q, got, exact, 100*rel, 100*histError)
			}
		}
	}
	if got := quantileOf(0.5, new(latencyHist)); got != 0 {
		t.Errorf("quantile of nothing = %v, want 0", got)
	}
}

// TestTimelineGroundTruth feeds requests at known times and checks every
// minute's counts, rates and percentiles by hand.
func TestTimelineGroundTruth(t *testing.T) {
	clock := &fakeNow{t: time.Unix(600*60+30, 0)} // half a minute into minute 600
	tr := NewTracker(TrackerOptions{Now: clock.now})
	syncPairs(tr, trackerConfig("p"))
	finish := func(at time.Duration, r probe.Result) {
		clock.t = time.Unix(600*60+30, 0).Add(at)
		tr.Offered(config.PairKey{Target: "t", Probe: "p"})
		r.Target, r.Probe = "t", "p"
		tr.Finished(&r)
	}
	// Minute 600 (the pair ran its last 30s): 10 accepted with TTFT 10..100ms,
	// one shed at max_in_flight (judged), one abandoned at shutdown (not).
	for i := 1; i <= 10; i++ {
		finish(time.Duration(i)*time.Second, probe.Result{Disposition: probe.Accepted,
			TTFT: time.Duration(10*i) * time.Millisecond, ITLs: []time.Duration{5 * time.Millisecond}})
	}
	finish(20*time.Second, probe.Result{Disposition: probe.Cancelled, Reason: probe.ReasonInFlightCap})
	finish(21*time.Second, probe.Result{Disposition: probe.Cancelled, Reason: probe.ReasonShutdown})
	// Minute 602: one client timeout censored at 2s, one accepted at 40ms.
	finish(100*time.Second, probe.Result{Disposition: probe.ClientTimeout, Sent: clock.t, Elapsed: 2 * time.Second})
	finish(101*time.Second, probe.Result{Disposition: probe.Accepted, TTFT: 40 * time.Millisecond})
	clock.t = time.Unix(602*60+45, 0) // 45s into minute 602

	ps := tr.Snapshot()[0]
	if len(ps.Minutes) != timelineMinutes {
		t.Fatalf("%d minutes, want %d", len(ps.Minutes), timelineMinutes)
	}
	m600, m601, m602 := ps.Minutes[57], ps.Minutes[58], ps.Minutes[59]
	if m602.Start != time.Unix(602*60, 0) || ps.Minutes[0].Start != time.Unix(543*60, 0) {
		t.Fatalf("minutes start %v .. %v, want minute 543 .. 602", ps.Minutes[0].Start, m602.Start)
	}
	if ps.Minutes[56].Running || !m600.Running {
		t.Error("a minute before the pair started counts as running, or its first minute does not")
	}
	within := func(name string, got, want time.Duration) {
		t.Helper()
		if math.Abs(float64(got-want)) > histError*float64(want) {
			t.Errorf("%s = %v, want %v ± %.1f%%", name, got, want, 100*histError)
		}
	}
	if m600.Ran != 30*time.Second || m601.Ran != time.Minute || m602.Ran != 45*time.Second || ps.Minutes[56].Ran != 0 {
		t.Errorf("ran %v, %v, %v (and %v before the start); want 30s, 1m, 45s, 0", m600.Ran, m601.Ran, m602.Ran, ps.Minutes[56].Ran)
	}
	if m600.Ended != 12 || m600.Accepted != 10 {
		t.Errorf("minute 600: ended %d accepted %d, want 12, 10", m600.Ended, m600.Accepted)
	}
	if m600.Acceptance != 10.0/11 {
		t.Errorf("minute 600 acceptance %v, want 10/11 (shed in, abandoned out)", m600.Acceptance)
	}
	if m600.Goodput != 10.0/30 {
		t.Errorf("minute 600 goodput %v, want 10 accepted over the 30s the pair ran", m600.Goodput)
	}
	within("minute 600 TTFT p50", m600.TTFTP50, 50*time.Millisecond)
	within("minute 600 TTFT p99", m600.TTFTP99, 100*time.Millisecond)
	within("minute 600 ITL p99", m600.ITLP99, 5*time.Millisecond)
	if m601.Ended != 0 || m601.Acceptance != -1 || m601.Goodput != 0 || m601.TTFTP99 != 0 || !m601.Running {
		t.Errorf("empty minute 601: %+v", m601)
	}
	if m602.Acceptance != 0.5 || m602.Goodput != 1.0/45 {
		t.Errorf("minute 602: acceptance %v goodput %v, want 0.5 and 1 over the 45s so far", m602.Acceptance, m602.Goodput)
	}
	within("minute 602 TTFT p99 (the timeout censored at 2s)", m602.TTFTP99, 2*time.Second)
	within("minute 602 TTFT p50", m602.TTFTP50, 40*time.Millisecond)
	want := map[probe.Disposition]uint64{probe.Accepted: 11, probe.Cancelled: 2, probe.ClientTimeout: 1}
	if !maps.Equal(ps.HourDispositions, want) {
		t.Errorf("hour dispositions %v, want %v", ps.HourDispositions, want)
	}

	// An hour later minute 600's bucket is reused for minute 660: nothing
	// of minute 600 is left, and the ring holds minutes 601..660.
	clock.t = time.Unix(660*60+1, 0)
	finish(60*time.Minute+1*time.Second-30*time.Second, probe.Result{Disposition: probe.Accepted, TTFT: time.Second})
	ps = tr.Snapshot()[0]
	last := ps.Minutes[59]
	if last.Start != time.Unix(660*60, 0) || last.Ended != 1 || last.Accepted != 1 {
		t.Errorf("minute 660 after the wrap: %+v", last)
	}
	if ps.HourDispositions[probe.Accepted] != 2 || ps.HourDispositions[probe.Cancelled] != 0 {
		t.Errorf("hour dispositions after the wrap %v, want minute 602's and 660's only", ps.HourDispositions)
	}
}

// TestTimelineMemoryFollowsRate: an hour of a pair at 0.05 req/s, 16
// tokens each, keeps ~2.4 KiB: its older minutes sealed (~35 bytes each),
// not ~9 KiB of minute buckets with only the histogram buckets that
// counted, nor every bucket of every minute (~83 KiB), so 1,000 such
// pairs fit in a small prober.
func TestTimelineMemoryFollowsRate(t *testing.T) {
	var tl timeline
	start := time.Unix(1_800_000_000, 0)
	for s := 0; s < 3600; s += 20 {
		r := probe.Result{Disposition: probe.Accepted, TTFT: time.Duration(100+s%50) * time.Millisecond}
		for i := range 16 {
			r.ITLs = append(r.ITLs, time.Duration(20+i)*time.Millisecond)
		}
		tl.record(start.Add(time.Duration(s)*time.Second), &r)
	}
	size := int(unsafe.Sizeof(tl)) + cap(tl.sealed.buf) + cap(tl.buckets)*int(unsafe.Sizeof(minuteBucket{}))
	for _, b := range tl.buckets {
		size += 4 * (cap(b.ttft.counts) + cap(b.itl.counts))
	}
	t.Logf("one pair's hour at 0.05 req/s: %d bytes", size)
	if size > 3<<10 {
		t.Errorf("one pair's hour at 0.05 req/s holds %d bytes, want at most 3 KiB", size)
	}
	kept := timelineBuckets(&tl)
	if len(kept) != timelineMinutes {
		t.Errorf("%d minutes after an hour, want %d", len(kept), timelineMinutes)
	}
	if got := quantileOf(0.99, &kept[0].ttft); kept[0].minute != start.Unix()/60 || got < 100*time.Millisecond || got > 160*time.Millisecond {
		t.Errorf("first minute %d TTFT p99 %v, want minute %d within the observed 100-150 ms (bucket midpoint)", kept[0].minute, got, start.Unix()/60)
	}
}

// timelineBuckets returns every minute tl keeps, sealed or not, oldest
// first.
func timelineBuckets(tl *timeline) []minuteBucket {
	var out []minuteBucket
	r := tl.sealed.reader()
	for {
		var b minuteBucket
		if !r.next(&b) {
			break
		}
		out = append(out, b)
	}
	return append(out, tl.buckets...)
}

func timelineMinuteNumbers(tl *timeline) []int64 {
	var got []int64
	for _, b := range timelineBuckets(tl) {
		got = append(got, b.minute)
	}
	return got
}

// TestTimelineClockBack: a clock gone back keeps the hour ending at its
// minute and the minute after it: the later minutes and those an hour
// before it go, sealed or not, and a sealed minute it lands in again
// counts on.
func TestTimelineClockBack(t *testing.T) {
	var tl timeline
	r := probe.Result{Disposition: probe.Accepted, TTFT: time.Second}
	for _, m := range []int64{1000, 1059, 1100, 1080} {
		tl.record(time.Unix(m*60, 0), &r)
	}
	if got, want := timelineMinuteNumbers(&tl), []int64{1059, 1080}; !slices.Equal(got, want) {
		t.Errorf("minutes kept %v, want %v", got, want)
	}
	for _, m := range []int64{1081, 1082, 1083, 1084, 1082} {
		tl.record(time.Unix(m*60, 0), &r)
	}
	got := timelineBuckets(&tl)
	if ms := timelineMinuteNumbers(&tl); !slices.Equal(ms, []int64{1059, 1080, 1081, 1082, 1083}) || got[3].ended != 2 {
		t.Errorf("minutes kept %v, minute 1082 ended %d: want 1059 and 1080-1083 with 2 in 1082", ms, got[3].ended)
	}
	// Counted out of order across a minute's end (Finished reads the clock
	// before its lock): the later minute keeps its request.
	var skew timeline
	skew.record(time.Unix(2001*60, 0), &r)
	skew.record(time.Unix(2001*60-1, 0), &r)
	if len(skew.buckets) != 2 || skew.buckets[0].minute != 2000 || skew.buckets[1].minute != 2001 || skew.buckets[1].ended != 1 {
		t.Errorf("buckets %+v, want minutes 2000 and 2001 with a request each", skew.buckets)
	}
}

// TestSealedMinutesRoundTrip: a sealed minute decodes to the bucket it
// was, an empty minute and saturated counts included, and dropping
// records from either end keeps the others decoding.
func TestSealedMinutesRoundTrip(t *testing.T) {
	var want []minuteBucket
	for i, m := range []int64{-3, -1, 5, 6, 200, 201} {
		b := minuteBucket{minute: m}
		if i%2 == 1 {
			b.ended, b.accepted, b.judged, b.completed = 3, 2, 3, math.MaxUint32
			b.dispositions[0], b.dispositions[7] = 2, 1
			b.ttft.add(histMin)
			b.ttft.add(time.Hour) // the last bucket
			for range 3 {
				b.itl.add(20 * time.Millisecond)
			}
			b.itl.counts[0] |= histCountMax // saturated
		}
		want = append(want, b)
	}
	var s sealedMinutes
	for i := range want {
		s.add(&want[i])
	}
	check := func(name string, want []minuteBucket) {
		t.Helper()
		got := timelineBuckets(&timeline{sealed: s})
		if len(got) != len(want) {
			t.Fatalf("%s: %d minutes, want %d", name, len(got), len(want))
		}
		for i := range want {
			g, w := got[i], want[i]
			if g.minute != w.minute || g.ended != w.ended || g.accepted != w.accepted || g.judged != w.judged ||
				g.completed != w.completed || g.dispositions != w.dispositions ||
				!slices.Equal(g.ttft.counts, w.ttft.counts) || !slices.Equal(g.itl.counts, w.itl.counts) {
				t.Errorf("%s: minute %d decodes to %+v, want %+v", name, i, g, w)
			}
		}
	}
	check("all", want)
	s.dropOutside(0, 200)
	check("dropped both ends", want[2:5])
	if popped := s.popFrom(6, nil); len(popped) != 2 || popped[0].minute != 6 || popped[1].minute != 200 {
		t.Errorf("popped %+v, want minutes 6 and 200", popped)
	}
	check("popped", want[2:3])
	s.dropOutside(10, 20)
	if len(s.buf) != 0 {
		t.Errorf("%d bytes left after dropping every minute", len(s.buf))
	}
}

// TestLatencyHistCountStops: a bucket's count stops at histCountMax
// rather than running into the next bucket's index.
func TestLatencyHistCountStops(t *testing.T) {
	h := latencyHist{counts: []uint32{uint32(histIndex(time.Millisecond))<<24 | (histCountMax - 1)}}
	h.add(time.Millisecond)
	h.add(time.Millisecond)
	h.add(time.Second)
	if len(h.counts) != 2 || h.counts[0]&histCountMax != histCountMax || histEntryIndex(h.counts[0]) != histIndex(time.Millisecond) {
		t.Errorf("counts %x, want bucket %d at %d and one of 1 s", h.counts, histIndex(time.Millisecond), histCountMax)
	}
	if got := quantileOf(1, &h); got != histValue(histIndex(time.Second)) {
		t.Errorf("p100 %v, want the 1 s bucket's %v", got, histValue(histIndex(time.Second)))
	}
}
