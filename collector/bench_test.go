package collector

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vllm-prober/vllm-prober/config"
	"github.com/vllm-prober/vllm-prober/probe"
)

// BenchmarkScrape measures one /metrics scrape of a prober with 10 targets
// and 3 probes each: histograms filled by 1000 results per pair and every
// target's server metrics re-exported from the vLLM sample. It reports the
// exposition size per scrape next to time and allocations.
func BenchmarkScrape(b *testing.B) {
	srv := newFakeServer(b, sample(b))
	cfg := &config.Config{}
	for _, name := range []string{"chat-short", "chat-long", "completions"} {
		cfg.Probes = append(cfg.Probes, config.Probe{Name: name, SLO: config.SLO{TTFT: dur("300ms"), TPOT: dur("50ms"), E2EL: dur("20s")}})
	}
	var targets []string
	for i := range 10 {
		name := fmt.Sprintf("llama-%02d", i)
		targets = append(targets, name)
		cfg.Targets = append(cfg.Targets, serverTarget(name, srv))
	}
	c := New(Options{})
	syncPairs(c, cfg)
	fill(c, cfg)
	h := newHarness(b, ScraperOptions{})
	h.Apply(cfg)
	h.wait(b, targets...)
	for _, bc := range []struct {
		name string
		cs   []prometheus.Collector
	}{
		{"all", []prometheus.Collector{c, h, NewSelfMetrics(nil)}},
		{"probes", []prometheus.Collector{c}},
		{"server", []prometheus.Collector{h}},
	} {
		reg := prometheus.NewRegistry()
		reg.MustRegister(bc.cs...)
		b.Run(bc.name, func(b *testing.B) { benchmarkGather(b, reg) })
	}
}

// benchmarkGather gathers and encodes reg as /metrics does (uncompressed
// text), reporting the size of one exposition.
func benchmarkGather(b *testing.B, reg prometheus.Gatherer) {
	var buf bytes.Buffer
	series := 0
	b.ReportAllocs()
	for b.Loop() {
		buf.Reset()
		mfs, err := reg.Gather()
		if err != nil {
			b.Fatal(err)
		}
		if err := encodeText(&buf, mfs); err != nil {
			b.Fatal(err)
		}
		series = 0
		for _, mf := range mfs {
			series += len(mf.GetMetric())
		}
	}
	b.ReportMetric(float64(buf.Len()), "bytes/scrape")
	var gz bytes.Buffer
	w := gzip.NewWriter(&gz)
	_, _ = w.Write(buf.Bytes())
	_ = w.Close()
	b.ReportMetric(float64(gz.Len()), "gzip-bytes/scrape")
	b.ReportMetric(float64(series), "series")
}

// fill finishes 1000 varied results per pair.
func fill(c *Collector, cfg *config.Config) {
	rng := rand.New(rand.NewPCG(1, 2))
	ms := func(mean float64) time.Duration {
		return time.Duration(rng.ExpFloat64() * mean * float64(time.Millisecond))
	}
	for _, t := range cfg.Targets {
		for _, p := range cfg.Probes {
			for i := range 1000 {
				r := &probe.Result{
					Target: t.Name, Probe: p.Name, RequestID: fmt.Sprintf("chatcmpl-%d", i), Disposition: probe.Accepted,
					Sent: fixedNow, Lag: ms(1), TTFT: ms(150), TPOT: ms(25), E2EL: ms(2000),
					ITLs:   []time.Duration{ms(25), ms(25), ms(25), ms(25)},
					Phases: probe.PhaseTimes{probe.PhaseHeaders: ms(5), probe.PhaseFirstToken: ms(140), probe.PhaseDecode: ms(1800)},
					Server: &probe.ServerTiming{QueueTime: ms(10), TTFT: ms(120)}, PromptTokens: 128, OutputTokens: 64,
				}
				c.Offered(t.Name, p.Name)
				c.Finished(r)
			}
		}
	}
}
