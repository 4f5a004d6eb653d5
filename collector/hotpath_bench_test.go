package collector

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vllm-prober/vllm-prober/config"
	"github.com/vllm-prober/vllm-prober/probe"
)

// BenchmarkFinished measures what the collector does per finished request:
// the disposition counters and every latency histogram observation (TTFT,
// TPOT, E2EL, lag, server timing, three phases and 63 ITL gaps), reported
// per request and per observation. Parallel, so lock contention between
// pairs shows: each goroutine finishes results of its own pair, as the
// engine's request goroutines do.
func BenchmarkFinished(b *testing.B) {
	cfg := &config.Config{}
	for i := range 8 {
		cfg.Targets = append(cfg.Targets, config.Target{Name: fmt.Sprintf("t%d", i), URL: "http://127.0.0.1:1"})
	}
	cfg.Probes = []config.Probe{{Name: "chat", SLO: config.SLO{TTFT: dur("300ms"), TPOT: dur("50ms")}}}
	c := New(Options{})
	syncPairs(c, cfg)
	itls := make([]time.Duration, 63)
	for i := range itls {
		itls[i] = time.Duration(20+i%10) * time.Millisecond
	}
	const observations = 63 + 10
	var next atomic.Int64
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		target := cfg.Targets[int(next.Add(1))%len(cfg.Targets)].Name
		r := &probe.Result{
			Target: target, Probe: "chat", Disposition: probe.Accepted, Sent: fixedNow,
			Lag: 80 * time.Microsecond, TTFT: 150 * time.Millisecond, TPOT: 25 * time.Millisecond, E2EL: 1700 * time.Millisecond,
			ITLs:   itls,
			Phases: probe.PhaseTimes{probe.PhaseHeaders: 5 * time.Millisecond, probe.PhaseFirstToken: 140 * time.Millisecond, probe.PhaseDecode: 1500 * time.Millisecond},
			Server: &probe.ServerTiming{QueueTime: time.Millisecond, TTFT: 120 * time.Millisecond}, PromptTokens: 128, OutputTokens: 64,
		}
		for pb.Next() {
			c.Offered(config.PairKey{Target: target, Probe: "chat"})
			c.Finished(r)
		}
	})
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/observations, "ns/observation")
}
