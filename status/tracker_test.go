package status

import (
	"math"
	"reflect"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/vllm-prober/vllm-prober/config"
	"github.com/vllm-prober/vllm-prober/internal/memtest"
	"github.com/vllm-prober/vllm-prober/probe"
)

// fakeNow is a settable clock.
type fakeNow struct{ t time.Time }

func (f *fakeNow) now() time.Time { return f.t }

func trackerConfig(probes ...string) *config.Config {
	cfg := &config.Config{Targets: []config.Target{{Name: "t"}}}
	for _, p := range probes {
		cfg.Probes = append(cfg.Probes, config.Probe{Name: p, Objective: 0.99})
	}
	return cfg
}

// syncPairs makes the tracked pairs those of cfg through the Sink calls
// the engine makes: PairStopped for pairs cfg lacks, PairStarted for every
// pair of cfg (an unchanged pair's PairStarted changes nothing).
func syncPairs(tr *Tracker, cfg *config.Config) {
	pairs := cfg.Pairs()
	for _, k := range slices.Clone(tr.order) {
		if !slices.ContainsFunc(pairs, func(p config.Pair) bool { return p.Key == k }) {
			tr.PairStopped(k)
		}
	}
	for _, p := range pairs {
		tr.PairStarted(p)
	}
}

func TestTrackerSnapshot(t *testing.T) {
	clock := &fakeNow{t: time.Unix(1000, 0)}
	tr := NewTracker(TrackerOptions{Window: time.Minute, Now: clock.now})
	syncPairs(tr, trackerConfig("p"))
	finish := func(r probe.Result) {
		tr.Offered(config.PairKey{Target: "t", Probe: "p"})
		r.Target, r.Probe = "t", "p"
		tr.Finished(&r)
	}
	clock.t = clock.t.Add(10 * time.Second)
	for i := 1; i <= 100; i++ {
		finish(probe.Result{Disposition: probe.Accepted, TTFT: time.Duration(i) * time.Millisecond,
			ITLs: []time.Duration{time.Duration(i) * time.Microsecond}})
	}
	finish(probe.Result{Disposition: probe.ServerFailure, Reason: probe.ReasonHTTP5xx}) // completed by the server
	finish(probe.Result{Disposition: probe.ServerFailure, Reason: probe.ReasonConnect})
	finish(probe.Result{Disposition: probe.Cancelled, Reason: probe.ReasonInFlightCap}) // shed: stays offered
	finish(probe.Result{Disposition: probe.Cancelled, Reason: probe.ReasonShutdown})    // abandoned
	tr.Offered(config.PairKey{Target: "t", Probe: "p"})                                 // still in flight

	ps := tr.Snapshot()[0]
	tests := []struct {
		name      string
		got, want any
	}{
		{"offered", ps.Offered, uint64(105)},
		{"in flight", ps.InFlight, int64(1)},
		{"accepted", ps.AcceptedSinceStart, uint64(100)},
		{"window is the pair's age", ps.Window, 10 * time.Second},
		{"goodput over the age", ps.Goodput, 10.0},
		{"completed counts what the server completed", ps.Completed, 10.1},
		{"acceptance leaves only abandoned requests out", ps.Acceptance, 100.0 / 103.0},
		{"ttft p50 nearest rank", ps.TTFTP50, 50 * time.Millisecond},
		{"ttft p99 nearest rank", ps.TTFTP99, 99 * time.Millisecond},
		{"itl p99", ps.ITLP99, 99 * time.Microsecond},
		{"not accepted in judge order", ps.NotAccepted(), []DispositionCount{{probe.ServerFailure, 2}, {probe.Cancelled, 2}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if !equal(tc.got, tc.want) {
				t.Errorf("got %v, want %v", tc.got, tc.want)
			}
		})
	}

	t.Run("samples age out of the window", func(t *testing.T) {
		clock.t = clock.t.Add(2 * time.Minute)
		ps := tr.Snapshot()[0]
		if ps.Goodput != 0 || ps.Acceptance != -1 || ps.TTFTP99 != 0 || ps.Window != time.Minute {
			t.Errorf("after the window: goodput %v acceptance %v ttft p99 %v window %v", ps.Goodput, ps.Acceptance, ps.TTFTP99, ps.Window)
		}
		if ps.AcceptedSinceStart != 100 {
			t.Errorf("counts since start lost: %d", ps.AcceptedSinceStart)
		}
	})
	t.Run("sync keeps staying pairs and drops removed ones", func(t *testing.T) {
		syncPairs(tr, trackerConfig("p", "q"))
		snap := tr.Snapshot()
		if len(snap) != 2 || snap[0].Offered != 105 || snap[1].Offered != 0 {
			t.Fatalf("after adding q: %+v", snap)
		}
		syncPairs(tr, trackerConfig("q"))
		tr.Finished(&probe.Result{Target: "t", Probe: "p", Disposition: probe.Accepted}) // removed: ignored
		if snap := tr.Snapshot(); len(snap) != 1 || snap[0].Probe != "q" {
			t.Fatalf("after removing p: %+v", snap)
		}
	})
}

// TestTrackerCensorsTimeouts: a client timeout is a TTFT sample at the time
// it was abandoned when no token came, and keeps its measured TTFT when one
// did; other failures without a token add no sample.
func TestTrackerCensorsTimeouts(t *testing.T) {
	tr := NewTracker(TrackerOptions{})
	syncPairs(tr, trackerConfig("p"))
	offerAndFinish(tr, []probe.Result{
		{Disposition: probe.ClientTimeout, Reason: probe.ReasonTimeout, Elapsed: 2 * time.Second},
		{Disposition: probe.ClientTimeout, Reason: probe.ReasonTimeout, Elapsed: 2 * time.Second, TTFT: 300 * time.Millisecond},
		{Disposition: probe.ServerFailure, Reason: probe.ReasonDisconnect, Elapsed: 5 * time.Second},
	})
	ps := tr.Snapshot()[0]
	if ps.WindowSamplesTTFT != 2 || ps.TTFTP50 != 300*time.Millisecond || ps.TTFTP99 != 2*time.Second {
		t.Errorf("TTFT samples %d, p50 %v, p99 %v; want 2, 300ms, 2s", ps.WindowSamplesTTFT, ps.TTFTP50, ps.TTFTP99)
	}
}

func TestTrackerBoundsSamples(t *testing.T) {
	tr := NewTracker(TrackerOptions{MaxSamples: 10})
	syncPairs(tr, trackerConfig("p"))
	for i := range 100 {
		tr.Offered(config.PairKey{Target: "t", Probe: "p"})
		tr.Finished(&probe.Result{Target: "t", Probe: "p", Disposition: probe.Accepted, TTFT: time.Duration(i+1) * time.Millisecond,
			ITLs: []time.Duration{time.Millisecond, time.Millisecond}})
	}
	ps := tr.Snapshot()[0]
	if ps.WindowSamplesTTFT != 10 || ps.WindowSamplesITL != 10 || ps.TTFTP50 < 90*time.Millisecond {
		t.Errorf("samples %d/%d, ttft p50 %v: want the 10 newest kept", ps.WindowSamplesTTFT, ps.WindowSamplesITL, ps.TTFTP50)
	}
}

// TestTrackerWindowMemory: a pair at 0.05 req/s with 16-token answers
// keeps its five-minute window of ITL samples in an array about as large
// as the most samples the window held at once (append's rounding: a
// quarter more at most), 4 bytes each, however long it runs (1,000 such pairs: docs/BENCHMARKS.md, "1,000 pairs").
func TestTrackerWindowMemory(t *testing.T) {
	clock := &fakeNow{t: time.Unix(1_800_000_000, 0)}
	tr := NewTracker(TrackerOptions{Now: clock.now, Window: 5 * time.Minute})
	syncPairs(tr, trackerConfig("p"))
	key := config.PairKey{Target: "t", Probe: "p"}
	most := 0
	for range 3 * 60 { // an hour, a request every 20 s
		clock.t = clock.t.Add(20 * time.Second)
		r := &probe.Result{Target: "t", Probe: "p", Disposition: probe.Accepted, TTFT: 100 * time.Millisecond}
		for i := range 15 {
			r.ITLs = append(r.ITLs, time.Duration(20+i)*time.Millisecond)
		}
		tr.Offered(key)
		tr.Finished(r)
		most = max(most, len(tr.pairs[key].window.itl))
	}
	st := tr.pairs[key].window
	if held, bound := cap(st.itl)*int(unsafe.Sizeof(compactDuration(0))), most*4*5/4; held > bound {
		t.Errorf("the window's ITL samples hold %d bytes (%d of %d bytes), want at most %d (the most at once, %d, × 4 bytes + 25%%)",
			held, cap(st.itl), unsafe.Sizeof(compactDuration(0)), bound, most)
	}
	if n := len(st.itl); n != 16*15 {
		t.Errorf("%d ITL samples in the window, want 240 (the 16 requests of the last five minutes, both ends included, × 15 gaps)", n)
	}
}

// manyPairsConfig is pairs/10 targets × 10 chat probes.
func manyPairsConfig(pairs int) *config.Config {
	cfg := &config.Config{}
	for i := range pairs / 10 {
		cfg.Targets = append(cfg.Targets, config.Target{Name: "t-" + strconv.Itoa(i)})
	}
	for i := range 10 {
		cfg.Probes = append(cfg.Probes, config.Probe{Name: "chat-" + strconv.Itoa(i), Objective: 0.99})
	}
	return cfg
}

// TestTrackerBytesPerNewPair: 1,000 pairs that each ran the three
// requests of their first minute at 0.05 req/s hold at most 2 KiB each:
// a pair's hour and recent requests grow as its requests end rather than
// starting at their full ~13 KiB (docs/BENCHMARKS.md, "1,000 pairs").
func TestTrackerBytesPerNewPair(t *testing.T) {
	const pairs = 1000
	clock := &fakeNow{t: time.Unix(1_800_000_000, 0)}
	cfg := manyPairsConfig(pairs)
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	tr := NewTracker(TrackerOptions{Now: clock.now})
	syncPairs(tr, cfg)
	for range 3 {
		clock.t = clock.t.Add(20 * time.Second)
		for _, p := range cfg.Pairs() {
			r := &probe.Result{Target: p.Key.Target, Probe: p.Key.Probe, Disposition: probe.Accepted, TTFT: 100 * time.Millisecond,
				ITLs: []time.Duration{20 * time.Millisecond, 21 * time.Millisecond}}
			tr.Offered(p.Key)
			tr.Finished(r)
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	per := float64(after.HeapAlloc-before.HeapAlloc) / pairs
	t.Logf("%.0f bytes per pair", per)
	if per > 3<<10 {
		t.Errorf("%.0f bytes per pair after its first three requests, want at most 3 KiB", per)
	}
	if n := len(tr.Snapshot()); n != pairs {
		t.Errorf("%d pairs tracked, want %d", n, pairs)
	}
	runtime.KeepAlive(tr)
}

// TestTrackerBytesPerPairSteadyState: lean pairs (0.05 req/s,
// 16-token answers: 15 ITLs, the phases of a real request, one in 25
// failing with a reason and an error text) after 70 minutes, with their
// hour, five-minute window and 20 recent requests full, hold at most
// 5.5 KiB each (docs/BENCHMARKS.md, "The status tracker at the steady
// state"); before the compact hour, window and recent requests they held
// 17,884 (18,110 at 1,000 pairs).
func TestTrackerBytesPerPairSteadyState(t *testing.T) {
	const pairs = 250 // as 1,000, in a quarter of the time
	clock := &fakeNow{t: time.Unix(1_800_000_000, 0)}
	cfg := manyPairsConfig(pairs)
	var tr *Tracker
	per := memtest.HeapBytesPer(pairs, func() any {
		tr = NewTracker(TrackerOptions{Now: clock.now})
		syncPairs(tr, cfg)
		for n := range 70 * 3 { // a request of every pair every 20 s
			for i, p := range cfg.Pairs() {
				clock.t = clock.t.Add(20 * time.Second / pairs)
				tr.Offered(p.Key)
				tr.Finished(steadyResult(p.Key, clock.t, n+i))
			}
		}
		return tr
	})
	t.Logf("%.0f bytes per pair", per)
	if per > 5632 {
		t.Errorf("%.0f bytes per pair at the steady state, want at most 5.5 KiB", per)
	}
	ps, recent, _ := tr.Pair(cfg.Pairs()[0].Key)
	if ps.WindowSamplesITL == 0 || len(recent) != recentRequests || len(ps.Minutes) != timelineMinutes || ps.Minutes[0].Ended != 3 {
		t.Errorf("window %d ITLs, %d recent, %d minutes (first ended %d): want a full window, 20 recent and a full hour of 3 a minute",
			ps.WindowSamplesITL, len(recent), len(ps.Minutes), ps.Minutes[0].Ended)
	}
}

// steadyResult is the n-th request of a lean pair: accepted with 15 ITLs
// and a request's phases, or one in 25 a server failure with its own
// error text and no answer.
func steadyResult(k config.PairKey, now time.Time, n int) *probe.Result {
	ms := func(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }
	r := &probe.Result{Target: k.Target, Probe: k.Probe, Replica: k.Replica, Scheduled: now.Add(-ms(400)),
		Disposition: probe.Accepted, HTTPStatus: 200, Phases: probe.PhaseTimes{probe.PhaseConnect: ms(0.3 + float64(n%7)/10),
			probe.PhaseHeaders: ms(4 + float64(n%5)), probe.PhaseFirstToken: ms(80 + float64(n%13)), probe.PhaseDecode: ms(300 + float64(n%17))}}
	if n%25 == 0 {
		r.Disposition, r.Reason, r.HTTPStatus = probe.ServerFailure, probe.ReasonHTTP5xx, 503
		r.Error = "HTTP 503: " + strconv.Itoa(n) + " Service Unavailable"
		r.E2EL = ms(5 + float64(n%3))
		return r
	}
	r.TTFT, r.E2EL = ms(85+float64(n%13)), ms(390+float64(n%17))
	for i := range 15 {
		r.ITLs = append(r.ITLs, ms(19.5+float64((n+i)%9)/4))
	}
	return r
}

// TestRecentKeepsEveryPhase: a recent request gives back every HTTP phase
// of probe.Phases, 0 for one that did not happen and for an unknown name,
// and keeping it allocates nothing (its phases are inline, not a map).
func TestRecentKeepsEveryPhase(t *testing.T) {
	if len(probe.Phases) > maxPhases {
		t.Fatalf("%d phases, a recent request keeps %d", len(probe.Phases), maxPhases)
	}
	res := &probe.Result{Disposition: probe.Accepted, Phases: probe.PhaseTimes{}}
	for i, name := range probe.Phases[1:] { // dns did not happen
		res.Phases[name] = time.Duration(i+1) * time.Millisecond
	}
	var r recentRing
	for range recentRequests {
		r.add(res)
	}
	if allocs := testing.AllocsPerRun(100, func() { r.add(res) }); allocs != 0 {
		t.Errorf("keeping a recent request allocates %.0f times, want 0", allocs)
	}
	v := r.newestFirst()[0]
	for _, name := range probe.Phases {
		if got := v.Phase(name); got != res.Phases[name] {
			t.Errorf("phase %s: %v, want %v", name, got, res.Phases[name])
		}
	}
	if got := v.Phase("unknown"); got != 0 {
		t.Errorf("unknown phase: %v, want 0", got)
	}
}

func equal(a, b any) bool {
	switch av := a.(type) {
	case float64:
		bv := b.(float64)
		return av-bv < 1e-9 && bv-av < 1e-9
	case []DispositionCount:
		bv := b.([]DispositionCount)
		if len(av) != len(bv) {
			return false
		}
		for i := range av {
			if av[i] != bv[i] {
				return false
			}
		}
		return true
	}
	return a == b
}

// TestRecentRequestRoundTrip: a recent request gives back what its
// result held, the rarer parts (error, tool calls, reasoning, server
// timing, a disposition or reason outside probe's lists) included, and
// a zero time stays zero.
func TestRecentRequestRoundTrip(t *testing.T) {
	sched := time.Date(2026, 1, 2, 3, 4, 5, 678901234, time.UTC)
	tests := []struct {
		name string
		res  probe.Result
		want RequestView
	}{
		{"lean", probe.Result{Scheduled: sched, Disposition: probe.Accepted, HTTPStatus: 200, TTFT: 85 * time.Millisecond, E2EL: 3*time.Second + 1500},
			RequestView{Scheduled: sched, Disposition: probe.Accepted, HTTPStatus: 200, TTFT: 85 * time.Millisecond, E2EL: 3*time.Second + time.Microsecond}},
		{"failed", probe.Result{Disposition: probe.ServerFailure, Reason: probe.ReasonHTTP5xx, HTTPStatus: 503, Error: "HTTP 503: busy"},
			RequestView{Disposition: probe.ServerFailure, Reason: probe.ReasonHTTP5xx, HTTPStatus: 503, Error: "HTTP 503: busy"}},
		{"answer and server timing", probe.Result{Disposition: probe.Accepted, TTFA: time.Second, ReasoningTokens: 40,
			ToolCalls: []probe.ToolCall{{Name: "get_weather"}, {Name: "x"}}, Server: &probe.ServerTiming{QueueTime: time.Millisecond, TTFT: 2 * time.Millisecond}},
			RequestView{Disposition: probe.Accepted, TTFA: time.Second, ReasoningTokens: 40, ToolCalls: 2, ToolName: "get_weather",
				Server: &probe.ServerTiming{QueueTime: time.Millisecond, TTFT: 2 * time.Millisecond}}},
		{"outside the lists", probe.Result{Disposition: "odd", Reason: "odder"}, RequestView{Disposition: "odd", Reason: "odder"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rr := newRecentRequest(&tc.res)
			got := rr.view()
			if !got.Scheduled.Equal(tc.want.Scheduled) || got.Scheduled.IsZero() != tc.want.Scheduled.IsZero() {
				t.Errorf("scheduled %v, want %v", got.Scheduled, tc.want.Scheduled)
			}
			got.Scheduled, tc.want.Scheduled = time.Time{}, time.Time{}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("view %+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestTrackerGroupsReplicas: replica pairs that start late still show
// under their target and probe, the gateway's row first, replicas by
// address.
func TestTrackerGroupsReplicas(t *testing.T) {
	tr := NewTracker(TrackerOptions{})
	for _, k := range []config.PairKey{
		{Target: "fleet", Probe: "a", Replica: "10.0.0.2:1"},
		{Target: "static", Probe: "a"},
		{Target: "fleet", Probe: "b", Replica: "10.0.0.2:1"},
		{Target: "fleet", Probe: "a"},
		{Target: "fleet", Probe: "a", Replica: "10.0.0.1:1"},
		{Target: "fleet", Probe: "a", Replica: "10.0.0.3:1"},
	} {
		tr.PairStarted(config.Pair{Key: k})
	}
	var got []string
	for _, ps := range tr.Snapshot() {
		got = append(got, config.PairKey{Target: ps.Target, Probe: ps.Probe, Replica: ps.Replica}.String())
	}
	want := []string{"fleet/a", "fleet/a@10.0.0.1:1", "fleet/a@10.0.0.2:1", "fleet/a@10.0.0.3:1", "static/a", "fleet/b@10.0.0.2:1"}
	if !slices.Equal(got, want) {
		t.Errorf("rows %q, want %q", got, want)
	}
}

// TestTrackerTTFA: TTFA percentiles come from the requests that answered
// and the timeouts censored at the time they were abandoned; a reasoning
// stream that finished without an answer adds no sample. The status page
// shows the p99 and the pair page both percentiles.
func TestTrackerTTFA(t *testing.T) {
	tr := NewTracker(TrackerOptions{})
	syncPairs(tr, trackerConfig("p"))
	offerAndFinish(tr, []probe.Result{
		{Disposition: probe.Accepted, TTFT: 100 * time.Millisecond, TTFA: 400 * time.Millisecond},
		{Disposition: probe.LatencyFailure, TTFT: 100 * time.Millisecond, E2EL: time.Second}, // reasoning only
		{Disposition: probe.ClientTimeout, Reason: probe.ReasonTimeout, TTFT: 100 * time.Millisecond, Elapsed: 3 * time.Second},
	})
	ps := tr.Snapshot()[0]
	if ps.WindowSamplesTTFA != 2 || ps.TTFAP50 != 400*time.Millisecond || ps.TTFAP99 != 3*time.Second {
		t.Errorf("TTFA samples %d, p50 %v, p99 %v; want 2, 400ms, 3s", ps.WindowSamplesTTFA, ps.TTFAP50, ps.TTFAP99)
	}
	var sb strings.Builder
	if err := Render(&sb, Page{Now: time.Unix(0, 0), Pairs: []PairStats{ps}}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(sb.String(), "<th>TTFA p99 (ms)</th>") || !strings.Contains(sb.String(), "<td>3000.0</td></tr>") {
		t.Errorf("status page lacks the TTFA p99 column and value")
	}
	ps, recent, _ := tr.Pair(config.PairKey{Target: "t", Probe: "p"})
	sb.Reset()
	if err := RenderPair(&sb, PairPage{Now: time.Unix(0, 0), Stats: ps, Recent: recent}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"first answer token (TTFA)", "<td>2</td><td>400.0 ms</td><td>3000.0 ms</td>"} {
		if !strings.Contains(sb.String(), want) {
			t.Errorf("pair page lacks %q", want)
		}
	}
}

// offerAndFinish offers and finishes each result as a request of pair t/p.
func offerAndFinish(tr *Tracker, results []probe.Result) {
	for _, r := range results {
		tr.Offered(config.PairKey{Target: "t", Probe: "p"})
		r.Target, r.Probe = "t", "p"
		tr.Finished(&r)
	}
}

// TestCompactDuration: a window's latency is exact to the nanosecond
// below 2^31 ns, to the microsecond above, saturates at ~35 minutes, and
// keeps the order of the values.
func TestCompactDuration(t *testing.T) {
	tests := []struct {
		name   string
		d, got time.Duration
	}{
		{"zero", 0, 0},
		{"negative", -time.Millisecond, 0},
		{"nanoseconds", 20*time.Millisecond + 7, 20*time.Millisecond + 7},
		{"last exact", 1<<31 - 1, 1<<31 - 1},
		{"microseconds above 2^31 ns", 3*time.Second + 1234567, 3*time.Second + 1234*time.Microsecond},
		{"saturated", 2 * time.Hour, (1<<31 - 2) * time.Microsecond},
	}
	var prev compactDuration
	for _, tc := range tests[2:] {
		t.Run(tc.name, func(t *testing.T) {
			c := compact(tc.d)
			if got := c.duration(); got != tc.got {
				t.Errorf("%v comes back as %v, want %v", tc.d, got, tc.got)
			}
			if c <= prev || c == noDuration {
				t.Errorf("%v encodes to %#x, not above the smaller value's %#x nor noDuration", tc.d, c, prev)
			}
			prev = c
		})
	}
	for _, tc := range tests[:2] {
		if got := compact(tc.d).duration(); got != tc.got {
			t.Errorf("%s: %v comes back as %v, want %v", tc.name, tc.d, got, tc.got)
		}
	}
}

// TestTrackerRatesBeyondMaxSamples: a pair that ends more than MaxSamples
// requests within the window keeps only the newest MaxSamples; its rates
// and acceptance are then those of the span those requests cover, so each
// equals a hand count of the requests that ended in (now - Window, now],
// not MaxSamples divided by the whole window.
func TestTrackerRatesBeyondMaxSamples(t *testing.T) {
	clock := &fakeNow{t: time.Unix(1_800_000_000, 0)}
	tr := NewTracker(TrackerOptions{Window: time.Minute, MaxSamples: 100, Now: clock.now})
	syncPairs(tr, trackerConfig("p"))
	key := config.PairKey{Target: "t", Probe: "p"}
	type ended struct {
		at         time.Time
		r          probe.Result
		judged     bool
		completed  bool
		isAccepted bool
	}
	var log []ended
	for i := 1; i <= 600; i++ { // 10 req/s for a minute: 600 requests, 100 kept
		clock.t = clock.t.Add(100 * time.Millisecond)
		r := probe.Result{Target: "t", Probe: "p", Disposition: probe.Accepted, TTFT: time.Millisecond}
		switch {
		case i%5 == 0:
			r.Disposition, r.Reason = probe.Cancelled, probe.ReasonInFlightCap
		case i%4 == 0:
			r.Disposition, r.Reason = probe.ServerFailure, probe.ReasonHTTP5xx
		case i%7 == 0:
			r.Disposition, r.Reason = probe.Cancelled, probe.ReasonRemoved
		}
		tr.Offered(key)
		tr.Finished(&r)
		log = append(log, ended{clock.t, r, !r.Abandoned(), r.ServerCompleted(), r.Disposition == probe.Accepted})
	}
	ps := tr.Snapshot()[0]
	if ps.Window <= 0 || ps.Window > time.Minute {
		t.Fatalf("window %v, want within (0, 1m]", ps.Window)
	}
	// Hand count over the span the page's numbers cover.
	var accepted, judged, completed int
	for _, e := range log {
		if !e.at.After(clock.t.Add(-ps.Window)) {
			continue
		}
		if e.isAccepted {
			accepted++
		}
		if e.judged {
			judged++
		}
		if e.completed {
			completed++
		}
	}
	secs := ps.Window.Seconds()
	if got := ps.Goodput * secs; math.Abs(got-float64(accepted)) > 1e-6 {
		t.Errorf("goodput %v/s over %v = %v requests, want the %d accepted that ended in it (10/s offered)", ps.Goodput, ps.Window, got, accepted)
	}
	if got := ps.Completed * secs; math.Abs(got-float64(completed)) > 1e-6 {
		t.Errorf("completed %v/s over %v = %v requests, want the %d completed that ended in it", ps.Completed, ps.Window, got, completed)
	}
	if want := float64(accepted) / float64(judged); math.Abs(ps.Acceptance-want) > 1e-9 {
		t.Errorf("acceptance %v, want %d / %d = %v", ps.Acceptance, accepted, judged, want)
	}
}
