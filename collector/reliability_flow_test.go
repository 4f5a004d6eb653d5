package collector

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vllm-prober/vllm-prober/collector/metricname"
	"github.com/vllm-prober/vllm-prober/config"
	"github.com/vllm-prober/vllm-prober/internal/promtext"
	"github.com/vllm-prober/vllm-prober/probe"
)

// flowCounts reads offered, the sum of dispositions and in flight of t/p
// from one scrape.
func flowCounts(t *testing.T, c *Collector) (offered, finished, inFlight float64) {
	t.Helper()
	fams := promtext.Gather(t, c)
	for _, m := range fams[metricname.RequestsOffered].GetMetric() {
		offered += m.GetCounter().GetValue()
	}
	for _, m := range fams[metricname.Requests].GetMetric() {
		finished += m.GetCounter().GetValue()
	}
	for _, m := range fams[metricname.RequestsInFlight].GetMetric() {
		inFlight += m.GetGauge().GetValue()
	}
	return offered, finished, inFlight
}

// TestCollectorFlowConsistentUnderLoad scrapes while requests are offered
// and finished concurrently: every scrape must show offered = sum of
// dispositions + in flight, with in flight never negative.
func TestCollectorFlowConsistentUnderLoad(t *testing.T) {
	c := New(Options{})
	syncPairs(c, testConfig(map[string][]string{"t": nil}, map[string]config.SLO{"p": {}}))
	var stop atomic.Bool
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				c.Offered(config.PairKey{Target: "t", Probe: "p"})
				c.Finished(&probe.Result{Target: "t", Probe: "p", Disposition: probe.Accepted, Scheduled: time.Now()})
			}
		}()
	}
	for range 200 {
		offered, finished, inFlight := flowCounts(t, c)
		if inFlight < 0 || offered != finished+inFlight {
			t.Errorf("offered %g, sum of dispositions %g, in flight %g", offered, finished, inFlight)
			break
		}
	}
	stop.Store(true)
	wg.Wait()
}

// TestCollectorIgnoresStaleResults: a pair removed and added again gets
// fresh series; a request offered to the old series that finishes after
// the re-add must not be counted in the new one.
func TestCollectorIgnoresStaleResults(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c := New(Options{Now: func() time.Time { return now }})
	with := testConfig(map[string][]string{"t": nil}, map[string]config.SLO{"p": {}})
	without := testConfig(map[string][]string{"u": nil}, map[string]config.SLO{"p": {}})
	syncPairs(c, with)
	c.Offered(config.PairKey{Target: "t", Probe: "p"})
	stale := &probe.Result{Target: "t", Probe: "p", Disposition: probe.Cancelled, Reason: probe.ReasonRemoved, Scheduled: now.Add(time.Second)}
	now = now.Add(2 * time.Second)
	syncPairs(c, without)
	now = now.Add(time.Second)
	syncPairs(c, with)
	c.Finished(stale)
	if offered, finished, inFlight := flowCounts(t, c); offered != 0 || finished != 0 || inFlight != 0 {
		t.Errorf("after a stale result: offered %g, finished %g, in flight %g; want all 0", offered, finished, inFlight)
	}
	c.Offered(config.PairKey{Target: "t", Probe: "p"})
	c.Finished(&probe.Result{Target: "t", Probe: "p", Disposition: probe.Accepted, Scheduled: now.Add(time.Second)})
	if offered, finished, inFlight := flowCounts(t, c); offered != 1 || finished != 1 || inFlight != 0 {
		t.Errorf("after a current result: offered %g, finished %g, in flight %g; want 1, 1, 0", offered, finished, inFlight)
	}
}
