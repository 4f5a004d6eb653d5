package server

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/model"

	"github.com/vllm-prober/vllm-prober/collector"
	"github.com/vllm-prober/vllm-prober/config"
	"github.com/vllm-prober/vllm-prober/internal/promtext"
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
		cfg.Probes = append(cfg.Probes, config.Probe{Name: name, SLO: config.SLO{TTFT: model.Duration(300 * time.Millisecond), TPOT: model.Duration(50 * time.Millisecond), E2EL: model.Duration(20 * time.Second)}})
	}
	var targets []string
	for i := range 10 {
		name := fmt.Sprintf("llama-%02d", i)
		targets = append(targets, name)
		cfg.Targets = append(cfg.Targets, serverTarget(name, srv))
	}
	c := collector.New(collector.Options{})
	startPairs(c, cfg)
	fill(c, cfg)
	h := newHarness(b, ScraperOptions{})
	h.Apply(cfg)
	h.wait(b, targets...)
	for _, bc := range []struct {
		name string
		cs   []prometheus.Collector
	}{
		{"all", []prometheus.Collector{c, h, collector.NewSelfMetrics(nil)}},
		{"probes", []prometheus.Collector{c}},
		{"server", []prometheus.Collector{h}},
	} {
		reg := prometheus.NewRegistry()
		reg.MustRegister(bc.cs...)
		b.Run(bc.name, func(b *testing.B) { promtext.BenchmarkGather(b, reg) })
	}
}

// fill finishes 1000 varied results per pair.
func fill(c *collector.Collector, cfg *config.Config) {
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
				c.Offered(config.PairKey{Target: t.Name, Probe: p.Name})
				c.Finished(r)
			}
		}
	}
}
