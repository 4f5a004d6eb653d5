package schedule_test

import (
	"slices"
	"testing"
	"time"

	"github.com/vllm-prober/vllm-prober/config"
	"github.com/vllm-prober/vllm-prober/internal/daemontest"
	"github.com/vllm-prober/vllm-prober/probe"
	"github.com/vllm-prober/vllm-prober/probe/schedule"
	"github.com/vllm-prober/vllm-prober/simulator"
	"github.com/vllm-prober/vllm-prober/simulator/simtest"
)

// TestChangedPairKeepsItsRequests: a reload that changes a pair (here its
// rate) does not remove it, so the requests its previous configuration
// has in flight are not abandoned: against a server that stalls every
// stream far past the probe's timeout they end client_timeout, as they
// would have without the reload, and stay in the acceptance denominator
// and the latency histograms (docs/design.md, "Dispositions and
// accounting": only shutdown and a reload that removes the pair abandon a
// request). The engine's grace period is shorter than the timeout, so a
// drain that cancelled them after it would end them cancelled/removed.
func TestChangedPairKeepsItsRequests(t *testing.T) {
	const timeout = 1500 * time.Millisecond
	o := simulator.DefaultOptions()
	o.Seed, o.Jitter, o.Trace = 1, 0, true
	o.Faults = simulator.Faults{Stall: 1, StallDuration: time.Minute}
	sim, url := simtest.Start(t, o)

	a := newAccounting(t)
	e := schedule.NewEngine(schedule.EngineOptions{Sinks: a.sinks(), Grace: 100 * time.Millisecond})
	p := relChatProbe("chat", 10, timeout)
	cfg := func(rate float64) *config.Config {
		p.Rate = rate
		return &config.Config{Probes: []config.Probe{p}, Targets: []config.Target{{Name: "sim", URL: url, Model: "sim-llama"}}}
	}
	if err := e.Apply(cfg(10)); err != nil {
		t.Fatal(err)
	}
	key := config.PairKey{Target: "sim", Probe: "chat"}.String()
	offered := func() int {
		a.counting.mu.Lock()
		defer a.counting.mu.Unlock()
		return a.counting.offered[key]
	}
	daemontest.WaitFor(t, time.Minute, "requests in flight before the change", func() bool { return offered() >= 5 })
	if err := e.Apply(cfg(11)); err != nil { // a changed pair: same key, new fingerprint
		t.Fatal(err)
	}
	before := offered() // at most this many were offered under the first configuration
	finished := func() int {
		a.counting.mu.Lock()
		defer a.counting.mu.Unlock()
		return a.counting.finished[key]
	}
	daemontest.WaitFor(t, time.Minute, "the requests offered before the change to end", func() bool { return finished() >= before })
	recs := schedule.StopAndReadLedger(t, e, a.lg, a.path)
	checkEveryRequestOnce(t, recs, a.counting)
	counts := gatherCounts(t, a.reg)
	checkLedgerMatches(t, recs, counts)

	// Ground truth: the simulator stalled every request it got.
	stalled := map[string]bool{}
	for _, tr := range sim.Trace() {
		if slices.Contains(tr.Faults, "stall") {
			stalled[tr.RequestID] = true
		}
	}
	var old, timedOut int
	for _, r := range recs {
		if r.Seq > uint64(before) || r.Sent == nil {
			continue
		}
		old++
		if r.Disposition == probe.Cancelled && r.Reason == probe.ReasonRemoved {
			t.Errorf("seq %d: cancelled/removed by a reload that changed its pair (server stalled it: %v), want client_timeout",
				r.Seq, stalled[r.RequestID])
			continue
		}
		if r.Disposition == probe.ClientTimeout {
			timedOut++
		}
	}
	if old == 0 {
		t.Fatal("no request was sent before the change")
	}
	pc := counts[key]
	if pc.reasons[probe.ReasonRemoved] != 0 {
		t.Errorf("failures_total{reason=removed} = %g after a reload that only changed the pair, want 0", pc.reasons[probe.ReasonRemoved])
	}
	// Every client timeout is observed in TTFT (its first token came
	// before the stall, or it is censored at the timeout).
	if pc.ttftCount < uint64(timedOut) {
		t.Errorf("TTFT histogram has %d observations, fewer than the %d client timeouts", pc.ttftCount, timedOut)
	}
	t.Logf("%d requests sent before the change, %d of them client_timeout; %d records", old, timedOut, len(recs))
}
