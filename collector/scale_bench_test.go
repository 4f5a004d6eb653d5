package collector

import (
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"

	"github.com/vllm-prober/vllm-prober/config"
	"github.com/vllm-prober/vllm-prober/internal/memtest"
	"github.com/vllm-prober/vllm-prober/internal/promtext"
	"github.com/vllm-prober/vllm-prober/probe"
)

// leanConfig is targets × probes pairs in lean mode: histograms ttft and
// e2el, native only (docs/design.md, Series budget).
func leanConfig(targets, probes int) *config.Config {
	native := false
	cfg := &config.Config{}
	for i := range probes {
		cfg.Probes = append(cfg.Probes, config.Probe{Name: fmt.Sprintf("chat-%d", i), API: config.APIChat, Rate: 0.05,
			SLO:        config.SLO{TTFT: dur("1s"), TPOT: dur("100ms"), E2EL: dur("10s")},
			Histograms: config.LeanHistograms, ClassicBuckets: &native})
	}
	for i := range targets {
		cfg.Targets = append(cfg.Targets, config.Target{Name: fmt.Sprintf("t-%03d", i), URL: "http://127.0.0.1:1"})
	}
	return cfg
}

// BenchmarkScrapeLean measures /metrics of the collector alone with 1,000
// lean pairs (100 targets × 10 probes), each with 20 accepted requests
// observed (docs/BENCHMARKS.md, "1,000 pairs"): through a registry
// (Collect), gathered directly (Gather), and written directly in each
// format (text, openmetrics, protobuf), as the daemon serves it to a client
// that asks for that format, with no pair changed since the last scrape or
// half of them; and, for each format, Gather encoded by expfmt (whole-…),
// as promhttp serves it.
func BenchmarkScrapeLean(b *testing.B) {
	cfg := leanConfig(100, 10)
	c := New(Options{})
	syncPairs(c, cfg)
	for _, p := range cfg.Pairs() {
		for i := range 20 {
			c.Offered(p.Key)
			c.Finished(&probe.Result{Target: p.Key.Target, Probe: p.Key.Probe, RequestID: fmt.Sprintf("chatcmpl-%d", i),
				Disposition: probe.Accepted, Sent: fixedNow, TTFT: time.Duration(100+i) * time.Millisecond,
				E2EL: time.Duration(400+i) * time.Millisecond, PromptTokens: 128, OutputTokens: 16})
		}
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	b.Run("registry", func(b *testing.B) { promtext.BenchmarkGather(b, reg) })
	b.Run("direct", func(b *testing.B) { promtext.BenchmarkGather(b, c) })
	pairs := cfg.Pairs()
	j := Join(prometheus.NewRegistry(), c)
	for _, f := range []struct {
		name   string
		format expfmt.Format
	}{{"text", expfmt.FmtText}, {"openmetrics", expfmt.FmtOpenMetrics_1_0_0}, {"protobuf", expfmt.FmtProtoDelim}} {
		// change is what changes between two scrapes: nothing, or an
		// offer to every other pair (0.05 req/s and a scrape every 15 s
		// change about half of the pairs).
		for _, change := range []struct {
			name string
			do   func()
		}{{"", func() {}}, {"-half-changed", func() {
			for i := 0; i < len(pairs); i += 2 {
				c.Offered(pairs[i].Key)
			}
		}}} {
			b.Run(f.name+change.name, func(b *testing.B) {
				var size countingWriter
				b.ReportAllocs()
				for b.Loop() {
					b.StopTimer()
					change.do()
					size = 0
					b.StartTimer()
					if err := j.WriteFormat(&size, f.format); err != nil { // as MetricsHandler writes to its client
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(size), "bytes/scrape")
			})
		}
		b.Run("whole-"+f.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				mfs, err := j.Gather()
				if err != nil {
					b.Fatal(err)
				}
				enc := expfmt.NewEncoder(io.Discard, f.format)
				for _, mf := range mfs {
					if err := enc.Encode(mf); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}

// TestCollectorBytesPerLeanPair: 1,000 lean pairs, each after one
// accepted request, hold at most 6 KiB of the collector's heap each: a
// pair keeps its own three label pairs, not a sorted set for each of its
// counter series with an extra label (docs/BENCHMARKS.md, "1,000 pairs").
func TestCollectorBytesPerLeanPair(t *testing.T) {
	const pairs = 1000
	cfg := leanConfig(pairs/10, 10)
	per := memtest.HeapBytesPer(pairs, func() any {
		c := New(Options{})
		syncPairs(c, cfg)
		for _, p := range cfg.Pairs() {
			c.Offered(p.Key)
			c.Finished(&probe.Result{Target: p.Key.Target, Probe: p.Key.Probe, RequestID: "chatcmpl-0",
				Disposition: probe.Accepted, Sent: fixedNow, TTFT: 100 * time.Millisecond,
				E2EL: 400 * time.Millisecond, PromptTokens: 128, OutputTokens: 16})
		}
		return c
	})
	t.Logf("%.0f bytes per pair", per)
	if per > 6<<10 {
		t.Errorf("%.0f bytes per lean pair, want at most 6 KiB (7,831 with the label sets kept per pair)", per)
	}
}

// TestCollectorBytesPerSteadyLeanPair: 1,000 lean pairs after 30 accepted
// requests each (10 minutes at 0.05 req/s), each with its own request id,
// hold at most 9 KiB each: their two native histograms keep
// nativeMaxExemplars exemplars each, ~285 bytes apiece with client_golang's
// protobuf structs (docs/design.md, "Exemplars").
func TestCollectorBytesPerSteadyLeanPair(t *testing.T) {
	const pairs, requests = 1000, 30
	cfg := leanConfig(pairs/10, 10)
	per := memtest.HeapBytesPer(pairs, func() any {
		c := New(Options{})
		syncPairs(c, cfg)
		for n := range requests {
			for _, p := range cfg.Pairs() {
				c.Offered(p.Key)
				c.Finished(&probe.Result{Target: p.Key.Target, Probe: p.Key.Probe, RequestID: fmt.Sprintf("chatcmpl-%032x", n),
					Disposition: probe.Accepted, Sent: fixedNow, TTFT: time.Duration(50+n) * time.Millisecond,
					E2EL: time.Duration(300+7*n) * time.Millisecond, PromptTokens: 128, OutputTokens: 16})
			}
		}
		return c
	})
	t.Logf("%.0f bytes per pair", per)
	if per > 9<<10 {
		t.Errorf("%.0f bytes per steady lean pair, want at most 9 KiB (11,409 with 10 exemplars per histogram)", per)
	}
}
