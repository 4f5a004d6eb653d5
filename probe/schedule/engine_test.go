package schedule

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/vllm-prober/vllm-prober/config"
	"github.com/vllm-prober/vllm-prober/internal/memtest"
	"github.com/vllm-prober/vllm-prober/probe"
)

// plannedUntil replays a pair's arrival process: the planned times from
// start up to end.
func plannedUntil(key pairKey, p config.Probe, start, end time.Time) []time.Time {
	a := NewArrivals(p.Rate, p.Burstiness, pairSeed(key, p))
	var out []time.Time
	for t := start.Add(a.first()); !t.After(end); t = t.Add(a.Next()) {
		out = append(out, t)
	}
	return out
}

func scheduled(rs []*probe.Result) []time.Time {
	out := make([]time.Time, len(rs))
	for i, r := range rs {
		out[i] = r.Scheduled
	}
	return out
}

func TestEngineOpenLoop(t *testing.T) {
	for _, tc := range []struct {
		name       string
		burstiness float64
		hold       bool
	}{
		{"instant responses, poisson", 1, false},
		{"responses never come, poisson", 1, true},
		{"instant responses, constant gaps", math.Inf(1), false},
		{"responses never come, constant gaps", math.Inf(1), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, &senderFactory{hold: tc.hold}, EngineOptions{})
			p := testProbe("p", 20, 100000)
			p.Burstiness = tc.burstiness
			if err := h.engine.Apply(testConfig([]string{"t"}, p)); err != nil {
				t.Fatal(err)
			}
			h.run(t, 30*time.Second, 1)
			want := plannedUntil(pairKey{Target: "t", Probe: "p"}, p, testEpoch, testEpoch.Add(30*time.Second))
			if !tc.hold {
				waitFor(t, "requests to finish", func() bool { return h.engine.inFlight("t", "p") == 0 })
				waitFor(t, "results to arrive", func() bool { o, f := h.sink.counts("t", "p"); return o == f })
			}
			offered, finished := h.sink.counts("t", "p")
			if offered != len(want) {
				t.Errorf("offered %d requests in 30s at 20/s, want %d", offered, len(want))
			}
			if inFlight := h.engine.inFlight("t", "p"); offered != finished+inFlight {
				t.Errorf("offered %d != finished %d + in flight %d", offered, finished, inFlight)
			}
			if tc.hold && h.engine.inFlight("t", "p") != offered {
				t.Errorf("in flight %d, want every offered request (%d) outstanding", h.engine.inFlight("t", "p"), offered)
			}
		})
	}
}

func TestEngineOpenLoopRealTime(t *testing.T) {
	// On the real clock, against a server 10x slower than the gap between
	// requests: a closed loop would never have more than one request
	// outstanding; an open loop reaches about ten. (The exact offered
	// count is checked on the fake clock in TestEngineOpenLoop.)
	sf := &senderFactory{delay: 200 * time.Millisecond}
	l := newRecSink()
	e := NewEngine(EngineOptions{Sinks: []probe.Sink{l}, NewRequester: sf.New, Grace: time.Millisecond})
	defer e.Shutdown(context.Background())
	p := testProbe("p", 50, 1000)
	p.Burstiness = math.Inf(1)
	if err := e.Apply(testConfig([]string{"t"}, p)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "5 requests in flight at once", func() bool { return e.inFlight("t", "p") >= 5 })
	waitFor(t, "25 requests offered", func() bool { o, _ := l.counts("t", "p"); return o >= 25 })
}

func TestEngineInFlightCap(t *testing.T) {
	h := newHarness(t, &senderFactory{hold: true}, EngineOptions{})
	p := testProbe("p", 10, 3)
	p.Burstiness = math.Inf(1)
	if err := h.engine.Apply(testConfig([]string{"t"}, p)); err != nil {
		t.Fatal(err)
	}
	h.run(t, time.Second, 1)
	offered, finished := h.sink.counts("t", "p")
	if offered != 10 || finished != 7 || h.engine.inFlight("t", "p") != 3 {
		t.Fatalf("offered %d finished %d in flight %d, want 10, 7, 3", offered, finished, h.engine.inFlight("t", "p"))
	}
	for _, r := range h.sink.results("t", "p") {
		if r.Disposition != probe.Cancelled || r.Reason != probe.ReasonInFlightCap || !r.Sent.IsZero() || r.Seq <= 3 {
			t.Errorf("seq %d: %s/%s sent %v, want cancelled/in_flight_cap, never sent", r.Seq, r.Disposition, r.Reason, r.Sent)
		}
	}
	// The three requests sent run in goroutines of their own, which may
	// not have reached the sender yet when the loop parks again.
	sender := h.factory.senders("t", "p")[0]
	waitFor(t, "the three requests to reach the sender", func() bool { return sender.calls.Load() >= 3 })
	if calls := sender.calls.Load(); calls != 3 {
		t.Errorf("sender called %d times, want 3", calls)
	}
	h.engine.Shutdown(context.Background())
	rs := h.sink.results("t", "p")
	if len(rs) != 10 {
		t.Fatalf("%d results after shutdown, want 10", len(rs))
	}
	for _, r := range rs[:3] {
		if r.Disposition != probe.Cancelled || r.Reason != probe.ReasonShutdown {
			t.Errorf("seq %d: %s/%s, want cancelled/shutdown", r.Seq, r.Disposition, r.Reason)
		}
	}
}

// TestEnginePreparesBeforePlannedTime: with a Preparer the loop prepares
// each request while it waits for the request's planned time, and the
// request is sent with the preparation made for its seq.
func TestEnginePreparesBeforePlannedTime(t *testing.T) {
	sf := &senderFactory{}
	h := newHarness(t, sf, EngineOptions{})
	sf.prepareClock = h.clock.Now
	p := testProbe("p", 10, 100)
	p.Burstiness = math.Inf(1) // a request every 100 ms
	if err := h.engine.Apply(testConfig([]string{"t"}, p)); err != nil {
		t.Fatal(err)
	}
	for range 5 {
		h.run(t, 100*time.Millisecond, 1)
	}
	waitFor(t, "5 results", func() bool { _, finished := h.sink.counts("t", "p"); return finished == 5 })
	prepares, sends := sf.preparing[0].record()
	if len(sends) != 5 || prepares != 6 { // the sixth waits for its time
		t.Fatalf("%d prepared, %d sent, want 6 and 5", prepares, len(sends))
	}
	scheduled := map[uint64]time.Time{}
	for _, r := range h.sink.results("t", "p") {
		scheduled[r.Seq] = r.Scheduled
	}
	for _, s := range sends {
		if !s.ok || s.prep.seq != s.seq || !s.prep.at.Before(scheduled[s.seq]) {
			t.Errorf("seq %d sent with %+v (ok %v), want the preparation of its seq made before %v", s.seq, s.prep, s.ok, scheduled[s.seq])
		}
	}
}

// TestEnginePreparedSurvivesInFlightCap: a request the in-flight cap
// refuses draws nothing; the next one sent uses what was prepared, as
// without preparing it would draw the item the refused one did not.
func TestEnginePreparedSurvivesInFlightCap(t *testing.T) {
	sf := &senderFactory{hold: true, release: make(chan struct{})}
	h := newHarness(t, sf, EngineOptions{})
	sf.prepareClock = h.clock.Now
	p := testProbe("p", 10, 1)
	p.Burstiness = math.Inf(1)
	if err := h.engine.Apply(testConfig([]string{"t"}, p)); err != nil {
		t.Fatal(err)
	}
	for range 4 { // seq 1 sent and held, 2 to 4 refused
		h.run(t, 100*time.Millisecond, 1)
	}
	close(sf.release)
	waitFor(t, "seq 1 to end", func() bool { return h.engine.inFlight("t", "p") == 0 })
	h.run(t, 100*time.Millisecond, 1) // seq 5 sent
	prepares, sends := sf.preparing[0].record()
	want := []preparedSend{{seq: 1, prep: preparation{seq: 1}, ok: true}, {seq: 5, prep: preparation{seq: 2}, ok: true}}
	for i := range sends {
		sends[i].prep.at = time.Time{}
	}
	if prepares != 3 || !slices.Equal(sends, want) {
		t.Fatalf("%d prepared, sent %+v; want 3 prepared (seq 1, 2, 6), sent %+v", prepares, sends, want)
	}
}

func TestEngineSeededSchedule(t *testing.T) {
	p := testProbe("p", 5, 100)
	p.Burstiness = 0.5
	p.Workload.Random = &config.RandomWorkload{Seed: 3}
	runOnce := func(targets []string, probe config.Probe) map[string][]time.Time {
		h := newHarness(t, &senderFactory{}, EngineOptions{})
		if err := h.engine.Apply(testConfig(targets, probe)); err != nil {
			t.Fatal(err)
		}
		h.run(t, 20*time.Second, len(targets))
		out := map[string][]time.Time{}
		for _, target := range targets {
			waitFor(t, "requests to finish", func() bool {
				o, f := h.sink.counts(target, probe.Name)
				return o == f
			})
			out[target] = scheduled(h.sink.results(target, probe.Name))
		}
		return out
	}
	a, b := runOnce([]string{"t1", "t2"}, p), runOnce([]string{"t1", "t2"}, p)
	reseeded := p
	reseeded.Workload.Random = &config.RandomWorkload{Seed: 4}
	c := runOnce([]string{"t1"}, reseeded)
	for _, tc := range []struct {
		name      string
		x, y      []time.Time
		wantEqual bool
	}{
		{"same config repeats", a["t1"], b["t1"], true},
		{"same config repeats for every pair", a["t2"], b["t2"], true},
		{"pairs differ", a["t1"], a["t2"], false},
		{"workload seed changes the schedule", a["t1"], c["t1"], false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if len(tc.x) < 50 {
				t.Fatalf("only %d requests", len(tc.x))
			}
			if got := slices.EqualFunc(tc.x, tc.y, time.Time.Equal); got != tc.wantEqual {
				t.Errorf("schedules equal = %v, want %v", got, tc.wantEqual)
			}
		})
	}
	t.Run("first send staggered within one mean gap", func(t *testing.T) {
		for _, s := range [][]time.Time{a["t1"], a["t2"], c["t1"]} {
			if off := s[0].Sub(testEpoch); off < 0 || off >= 200*time.Millisecond {
				t.Errorf("first send %v after start, want within [0, 200ms)", off)
			}
		}
		if a["t1"][0].Equal(a["t2"][0]) {
			t.Error("two pairs fire their first request together")
		}
	})
}

func TestEngineShutdown(t *testing.T) {
	for _, tc := range []struct {
		name       string
		sf         *senderFactory
		grace      time.Duration
		cancelCtx  bool
		want       probe.Disposition
		wantReason string
		maxWait    time.Duration
	}{
		{"requests finishing within grace are kept", &senderFactory{delay: 5 * time.Millisecond}, 5 * time.Second, false, probe.Accepted, "", 2 * time.Second},
		{"held requests cancelled after grace", &senderFactory{hold: true}, 30 * time.Millisecond, false, probe.Cancelled, probe.ReasonShutdown, 2 * time.Second},
		{"ctx ending cuts the grace short", &senderFactory{hold: true}, time.Hour, true, probe.Cancelled, probe.ReasonShutdown, 2 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, tc.sf, EngineOptions{Grace: tc.grace})
			if err := h.engine.Apply(testConfig([]string{"t1", "t2"}, testProbe("p", 10, 100))); err != nil {
				t.Fatal(err)
			}
			h.run(t, 2*time.Second, 2)
			ctx, cancel := context.WithCancel(context.Background())
			if tc.cancelCtx {
				cancel()
			}
			defer cancel()
			began := time.Now()
			if err := h.engine.Shutdown(ctx); err != nil {
				t.Fatal(err)
			}
			took := time.Since(began)
			h.sink.close()
			if took > tc.maxWait || (tc.want == probe.Cancelled && !tc.cancelCtx && took < tc.grace) {
				t.Errorf("shutdown took %v with grace %v", took, tc.grace)
			}
			for _, target := range []string{"t1", "t2"} {
				checkDrained(t, h, target, "p", tc.want, tc.wantReason)
			}
			time.Sleep(20 * time.Millisecond)
			if late := h.sink.lateCalls(); late != 0 {
				t.Errorf("%d sink calls after Shutdown returned", late)
			}
			if err := h.engine.Apply(testConfig([]string{"t1"}, testProbe("p", 10, 100))); !errors.Is(err, errEngineStopped) {
				t.Errorf("Apply after Shutdown: %v, want errEngineStopped", err)
			}
			if _, err := h.engine.ProbeOnce(context.Background(), pairKey{Target: "t1", Probe: "p"}); !errors.Is(err, errEngineStopped) {
				t.Errorf("ProbeOnce after Shutdown: %v, want errEngineStopped", err)
			}
			if err := h.engine.Shutdown(context.Background()); err != nil {
				t.Errorf("second Shutdown: %v", err)
			}
		})
	}
}

// checkDrained checks that every offered request of a pair finished with
// want/reason and the pair's senders are closed.
func checkDrained(t *testing.T, h *harness, target, probeName string, want probe.Disposition, reason string) {
	t.Helper()
	offered, finished := h.sink.counts(target, probeName)
	if offered == 0 || offered != finished || h.engine.inFlight(target, probeName) != 0 {
		t.Errorf("%s/%s: offered %d finished %d in flight %d", target, probeName, offered, finished, h.engine.inFlight(target, probeName))
	}
	for _, r := range h.sink.results(target, probeName) {
		if r.Disposition != want || r.Reason != reason {
			t.Errorf("%s/%s seq %d: %s/%s, want %s/%s", target, probeName, r.Seq, r.Disposition, r.Reason, want, reason)
		}
	}
	for _, s := range h.factory.senders(target, probeName) {
		if !s.closed.Load() {
			t.Errorf("%s/%s: sender not closed", target, probeName)
		}
	}
}

// TestLoopBytesPerPair: starting 1,000 pairs' loops allocates at most
// 1 KiB of heap per pair beside their Senders: a loop keeps the pair's
// key and fingerprint, not a copy of its config.Pair (docs/BENCHMARKS.md,
// "1,000 pairs").
func TestLoopBytesPerPair(t *testing.T) {
	const n = 1000
	clock := newFakeClock(testEpoch)
	shared := &fakeSender{}
	e := NewEngine(EngineOptions{Now: clock.Now, Sleep: clock.Sleep,
		NewRequester: func(config.Target, config.Probe) (Sender, error) { return shared, nil }})
	t.Cleanup(func() { e.Shutdown(context.Background()) })
	cfg := testConfig(nil, testProbe("chat", 0.05, 1))
	for i := range n {
		cfg.Targets = append(cfg.Targets, config.Target{Name: fmt.Sprintf("t-%04d", i), URL: "http://127.0.0.1:1"})
	}
	pairs := cfg.Pairs()
	per := memtest.HeapBytesPer(n, func() any {
		if err := e.ApplyPairs(pairs); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "loops to park", func() bool { return clock.parkedCount() == n })
		return nil
	})
	t.Logf("%.0f bytes per pair", per)
	if per > 1024 {
		t.Errorf("%.0f bytes of heap per started pair, want at most 1 KiB (1,625 with a copy of the config.Pair in each loop)", per)
	}
}
