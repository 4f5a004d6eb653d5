package status

import (
	"testing"
	"time"

	"github.com/vllm-prober/vllm-prober/config"
	"github.com/vllm-prober/vllm-prober/probe"
)

// TestTrackerIgnoresStaleResults: a request offered before its pair was
// removed and added again, finishing afterwards, is not counted in the new
// pair's state (in flight would go negative).
func TestTrackerIgnoresStaleResults(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tr := NewTracker(TrackerOptions{Now: func() time.Time { return now }})
	with := &config.Config{Targets: []config.Target{{Name: "t"}}, Probes: []config.Probe{{Name: "p", Rate: 1}}}
	without := &config.Config{Probes: with.Probes}
	syncPairs(tr, with)
	tr.Offered(config.PairKey{Target: "t", Probe: "p"})
	stale := &probe.Result{Target: "t", Probe: "p", Disposition: probe.Cancelled, Scheduled: now.Add(time.Second)}
	now = now.Add(2 * time.Second)
	syncPairs(tr, without)
	now = now.Add(time.Second)
	syncPairs(tr, with)
	tr.Finished(stale)
	tr.Offered(config.PairKey{Target: "t", Probe: "p"})
	tr.Finished(&probe.Result{Target: "t", Probe: "p", Disposition: probe.Accepted, Scheduled: now.Add(time.Second)})
	snap := tr.Snapshot()
	if len(snap) != 1 {
		t.Fatalf("%d pairs, want 1", len(snap))
	}
	if s := snap[0]; s.Offered != 1 || s.InFlight != 0 || s.Dispositions[probe.Cancelled] != 0 || s.Dispositions[probe.Accepted] != 1 {
		t.Errorf("offered %d, in flight %d, dispositions %v; want 1, 0, one accepted", s.Offered, s.InFlight, s.Dispositions)
	}
}

// TestTrackerForgetsOldSamplesUnwatched: with nobody viewing the page
// (no Snapshot), samples older than the window are still dropped, so
// memory follows the window, not MaxSamples.
func TestTrackerForgetsOldSamplesUnwatched(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tr := NewTracker(TrackerOptions{Window: time.Minute, Now: func() time.Time { return now }})
	syncPairs(tr, &config.Config{Targets: []config.Target{{Name: "t"}}, Probes: []config.Probe{{Name: "p", Rate: 1}}})
	for range 600 { // 10 minutes at 1/s
		now = now.Add(time.Second)
		tr.Offered(config.PairKey{Target: "t", Probe: "p"})
		tr.Finished(&probe.Result{Target: "t", Probe: "p", Disposition: probe.Accepted, Scheduled: now,
			TTFT: time.Millisecond, ITLs: []time.Duration{time.Millisecond, time.Millisecond}})
	}
	st := tr.pairs[pairKey{Target: "t", Probe: "p"}]
	if len(st.window.requests) > 61 || len(st.window.itl) > 122 {
		t.Errorf("kept %d requests and %d ITL samples for a one-minute window", len(st.window.requests), len(st.window.itl))
	}
}
