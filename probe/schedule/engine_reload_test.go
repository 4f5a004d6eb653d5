package schedule

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vllm-prober/vllm-prober/config"
	"github.com/vllm-prober/vllm-prober/probe"
	"github.com/vllm-prober/vllm-prober/probe/history"
	"github.com/vllm-prober/vllm-prober/probe/ledger"
	"github.com/vllm-prober/vllm-prober/probe/ledger/ledgertest"
)

func (e *Engine) loopOf(target, probeName string) *loop {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.loops[pairKey{Target: target, Probe: probeName}]
}

// reloadRun is the outcome of TestEngineReload's scenario.
type reloadRun struct {
	h                         *harness
	hist                      *history.History
	keep                      config.Probe
	keepBefore, keepAfter     *loop
	goneOffered, changeOffers int
}

// runReload runs t1 x {keep, gone, change} for 3s, reloads to t1 x {keep,
// change at a new rate} plus t2 x {keep}, applies that twice, runs 3s more
// and shuts down.
func runReload(t *testing.T) reloadRun {
	r := reloadRun{hist: history.New(1000)}
	r.h = newHarness(t, &senderFactory{hold: true}, EngineOptions{Sinks: []probe.Sink{r.hist}})
	h := r.h
	var gone, change config.Probe
	r.keep, gone, change = testProbe("keep", 10, 1000), testProbe("gone", 10, 1000), testProbe("change", 10, 1000)
	if err := h.engine.Apply(testConfig([]string{"t1"}, r.keep, gone, change)); err != nil {
		t.Fatal(err)
	}
	h.run(t, 3*time.Second, 3)
	r.keepBefore = h.engine.loopOf("t1", "keep")
	r.goneOffered, _ = h.sink.counts("t1", "gone")
	r.changeOffers, _ = h.sink.counts("t1", "change")

	change.Rate = 20
	cfg2 := testConfig([]string{"t1", "t2"}, r.keep, change)
	cfg2.Targets[1].Probes = []string{"keep"}
	cfg2.Targets[0].Line = 42 // where a target sits in the file is not its configuration
	if err := h.engine.Apply(cfg2); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "removed requests to end", func() bool {
		o, f := h.sink.counts("t1", "gone")
		return o == f
	})
	if err := h.engine.Apply(cfg2); err != nil {
		t.Fatal(err)
	}
	h.run(t, 3*time.Second, 3)
	r.keepAfter = h.engine.loopOf("t1", "keep")
	h.engine.Shutdown(context.Background())
	return r
}

func TestEngineReload(t *testing.T) {
	r := runReload(t)
	h, hist, keep, keepLoop, keepAfter := r.h, r.hist, r.keep, r.keepBefore, r.keepAfter
	goneOffered, changeOffered := r.goneOffered, r.changeOffers

	t.Run("unchanged pair keeps its loop and schedule", func(t *testing.T) {
		if keepLoop == nil || keepAfter != keepLoop {
			t.Error("the unchanged pair's loop was replaced")
		}
		if n := len(h.factory.senders("t1", "keep")); n != 1 {
			t.Errorf("%d senders built for the unchanged pair, want 1", n)
		}
		got := scheduled(h.sink.results("t1", "keep"))
		want := plannedUntil(pairKey{Target: "t1", Probe: "keep"}, keep, testEpoch, h.clock.Now())
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("schedule changed by the reload:\n got %v\nwant %v", got, want)
		}
	})
	t.Run("removed pair stops and its requests end removed", func(t *testing.T) {
		offered, _ := h.sink.counts("t1", "gone")
		if offered != goneOffered {
			t.Errorf("offered %d after removal, had %d", offered, goneOffered)
		}
		checkDrained(t, h, "t1", "gone", probe.Cancelled, probe.ReasonRemoved)
		if n := len(hist.Recent("t1", "gone", 0)); n != 0 {
			t.Errorf("%d history records of a removed pair", n)
		}
	})
	t.Run("changed pair restarts with seq continuing", func(t *testing.T) {
		if n := len(h.factory.senders("t1", "change")); n != 2 {
			t.Fatalf("%d senders built, want 2", n)
		}
		rs := h.sink.results("t1", "change")
		if len(rs) <= changeOffered {
			t.Fatalf("%d results, want more than the %d before the change", len(rs), changeOffered)
		}
		// The pair was changed, not removed: the requests of its first
		// configuration (held by the fake sender until their context
		// ends) are not abandoned at the grace period but run on, and
		// end at shutdown like the later ones.
		for i, r := range rs {
			want := probe.ReasonShutdown
			if r.Seq != uint64(i+1) || r.Reason != want {
				t.Errorf("result %d: seq %d reason %s, want seq %d reason %s", i, r.Seq, r.Reason, i+1, want)
			}
		}
	})
	t.Run("added pair starts at seq 1 and honours target probes", func(t *testing.T) {
		rs := h.sink.results("t2", "keep")
		if len(rs) == 0 || rs[0].Seq != 1 {
			t.Errorf("t2/keep: %d results, want some from seq 1", len(rs))
		}
		if o, _ := h.sink.counts("t2", "change"); o != 0 {
			t.Errorf("t2/change offered %d, target runs only keep", o)
		}
	})
}

func TestEngineApplyErrors(t *testing.T) {
	sf := &senderFactory{fail: map[string]error{"bad": errors.New("load workload: prompts.jsonl:3: invalid JSON")}}
	h := newHarness(t, sf, EngineOptions{})
	good := testProbe("good", 10, 10)
	err := h.engine.Apply(testConfig([]string{"t"}, good, testProbe("bad", 10, 10)))
	if err == nil || !strings.Contains(err.Error(), "t/bad") || !strings.Contains(err.Error(), "prompts.jsonl:3") {
		t.Fatalf("Apply error %v, want one naming t/bad and the dataset line", err)
	}
	if h.engine.loopOf("t", "good") == nil || h.engine.loopOf("t", "bad") != nil {
		t.Fatal("want t/good running and t/bad not")
	}
	running := h.engine.loopOf("t", "good")
	sf.mu.Lock()
	sf.fail["good"] = errors.New("load workload: gone")
	sf.mu.Unlock()
	good.Rate = 20
	if err := h.engine.Apply(testConfig([]string{"t"}, good)); err == nil || !strings.Contains(err.Error(), "t/good") {
		t.Fatalf("Apply error %v, want one naming t/good", err)
	}
	if h.engine.loopOf("t", "good") != running {
		t.Error("a change that could not start replaced the running pair")
	}
	h.run(t, time.Second, 1)
	if o, _ := h.sink.counts("t", "good"); o == 0 {
		t.Error("the previous configuration stopped probing")
	}
	if err := h.engine.Apply(nil); err == nil {
		t.Error("Apply(nil) gave no error")
	}
}

func TestEngineProbeOnce(t *testing.T) {
	hist := history.New(10)
	h := newHarness(t, &senderFactory{}, EngineOptions{Sinks: []probe.Sink{hist}})
	pairs := testConfig([]string{"t"}, testProbe("p", 10, 10)).Pairs()
	replica := pairs[0]
	replica.Key.Replica = "r:1"
	if err := h.engine.ApplyPairs(append(pairs, replica)); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, target, probe, replica string
		wantErr                      error
	}{
		{"known pair", "t", "p", "", nil},
		{"known replica", "t", "p", "r:1", nil},
		{"unknown replica", "t", "p", "r:2", ErrUnknownPair},
		{"unknown probe", "t", "nope", "", ErrUnknownPair},
		{"unknown target", "x", "p", "", ErrUnknownPair},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := h.engine.ProbeOnce(context.Background(), pairKey{Target: tc.target, Probe: tc.probe, Replica: tc.replica})
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("err %v, want %v", err, tc.wantErr)
			}
			if err == nil && (res.Disposition != probe.Accepted || res.Target != "t" || res.Probe != "p" || res.Replica != tc.replica) {
				t.Errorf("result %+v", res)
			}
		})
	}
	if o, f := h.sink.counts("t", "p"); o != 0 || f != 0 || len(hist.Recent("", "", 0)) != 0 {
		t.Errorf("ProbeOnce was counted: offered %d finished %d history %d", o, f, len(hist.Recent("", "", 0)))
	}
	t.Run("shutdown cancels a running probe", func(t *testing.T) {
		h := newHarness(t, &senderFactory{hold: true}, EngineOptions{})
		if err := h.engine.Apply(testConfig([]string{"t"}, testProbe("p", 10, 10))); err != nil {
			t.Fatal(err)
		}
		done := make(chan *probe.Result)
		go func() {
			res, _ := h.engine.ProbeOnce(context.Background(), pairKey{Target: "t", Probe: "p"})
			done <- res
		}()
		waitFor(t, "the probe to be sent", func() bool { return h.factory.senders("t", "p")[0].calls.Load() == 1 })
		h.engine.Shutdown(context.Background())
		if res := <-done; res.Reason != probe.ReasonShutdown {
			t.Errorf("reason %q, want shutdown", res.Reason)
		}
	})
}

func TestEngineAccounting(t *testing.T) {
	dir := t.TempDir()
	lg, err := ledger.Open(config.Ledger{Path: filepath.Join(dir, "ledger.jsonl"), RecordText: config.RecordTextNone}, nil)
	if err != nil {
		t.Fatal(err)
	}
	hist := history.New(1000)
	release := make(chan struct{})
	h := newHarness(t, &senderFactory{hold: true, release: release}, EngineOptions{Sinks: []probe.Sink{lg, hist}})
	targets, probes := []string{"t1", "t2"}, []config.Probe{testProbe("a", 10, 4), testProbe("b", 7, 2)}
	if err := h.engine.Apply(testConfig(targets, probes...)); err != nil {
		t.Fatal(err)
	}
	balanced := func(stage string) {
		for _, target := range targets {
			for _, p := range probes {
				o, f := h.sink.counts(target, p.Name)
				if in := h.engine.inFlight(target, p.Name); o != f+in || o == 0 {
					t.Errorf("%s: %s/%s offered %d != finished %d + in flight %d", stage, target, p.Name, o, f, in)
				}
			}
		}
	}
	settled := func() bool {
		for _, target := range targets {
			for _, p := range probes {
				if o, f := h.sink.counts(target, p.Name); o != f || h.engine.inFlight(target, p.Name) != 0 {
					return false
				}
			}
		}
		return true
	}
	h.run(t, 2*time.Second, 4)
	balanced("at the cap") // held requests: a stable snapshot
	close(release)
	waitFor(t, "released requests to finish", settled)
	h.run(t, 2*time.Second, 4)
	waitFor(t, "instant requests to finish", settled)
	h.engine.Shutdown(context.Background())
	balanced("after shutdown")
	if err := lg.Close(); err != nil {
		t.Fatal(err)
	}
	recs := ledgertest.Read(t, filepath.Join(dir, "ledger.jsonl"))
	ledgerCount := map[string]int{}
	for _, r := range recs {
		ledgerCount[fmt.Sprint(r.Target, "/", r.Probe, " ", r.Disposition)]++
	}
	sinkCount := map[string]int{}
	for _, target := range targets {
		for _, p := range probes {
			rs := h.sink.results(target, p.Name)
			for _, r := range rs {
				sinkCount[fmt.Sprint(r.Target, "/", r.Probe, " ", r.Disposition)]++
			}
			if n := len(hist.Recent(target, p.Name, 0)); n != len(rs) {
				t.Errorf("%s/%s: %d history records, %d results", target, p.Name, n, len(rs))
			}
		}
	}
	if fmt.Sprint(ledgerCount) != fmt.Sprint(sinkCount) {
		t.Errorf("ledger counts %v\nsink counts %v", ledgerCount, sinkCount)
	}
	if sinkCount["t1/a cancelled"] == 0 || sinkCount["t1/a accepted"] == 0 {
		t.Errorf("want both capped and accepted requests: %v", sinkCount)
	}
}

// TestEngineChangedThenRemoved: the requests a changed pair's previous
// configuration still has in flight are not cancelled while the pair
// runs; when a later reload removes the pair they get the grace period
// from then and end cancelled/removed, every sender is closed and the
// pair is fully accounted.
func TestEngineChangedThenRemoved(t *testing.T) {
	h := newHarness(t, &senderFactory{hold: true}, EngineOptions{})
	p := testProbe("p", 10, 1000)
	if err := h.engine.Apply(testConfig([]string{"t"}, p)); err != nil {
		t.Fatal(err)
	}
	h.run(t, time.Second, 1)
	p.Rate = 20
	if err := h.engine.Apply(testConfig([]string{"t"}, p)); err != nil {
		t.Fatal(err)
	}
	first, _ := h.sink.counts("t", "p")
	h.run(t, time.Second, 1)
	if _, finished := h.sink.counts("t", "p"); finished != 0 {
		t.Fatalf("%d requests ended while the changed pair runs and its sender holds them, want 0", finished)
	}
	if err := h.engine.Apply(testConfig([]string{"t"})); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the removed pair's requests to end", func() bool {
		o, f := h.sink.counts("t", "p")
		return o == f
	})
	if first == 0 {
		t.Fatal("no request offered before the change")
	}
	checkDrained(t, h, "t", "p", probe.Cancelled, probe.ReasonRemoved)
}
