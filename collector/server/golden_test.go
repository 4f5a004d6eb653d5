package server

import (
	"bytes"
	"flag"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/model"

	"github.com/vllm-prober/vllm-prober/collector"
	"github.com/vllm-prober/vllm-prober/config"
	"github.com/vllm-prober/vllm-prober/internal/promtext"
	"github.com/vllm-prober/vllm-prober/probe"
)

var update = flag.Bool("update", false, "rewrite testdata/golden.prom")

// exampleRegistry holds every collector of the package as the daemon wires
// them: one target with a chat and a completions probe, a few results, the
// target's server metrics scraped from the vLLM sample, and self metrics.
func exampleRegistry(t *testing.T) *prometheus.Registry {
	t.Helper()
	srv := newFakeServer(t, sample(t))
	cfg := &config.Config{
		Targets: []config.Target{serverTarget("llama-8b", srv)},
		Probes: []config.Probe{
			{Name: "chat-short", API: config.APIChat, SLO: config.SLO{TTFT: model.Duration(300 * time.Millisecond), TPOT: model.Duration(50 * time.Millisecond)}},
			{Name: "completions", API: config.APICompletions, SLO: config.SLO{E2EL: model.Duration(3 * time.Second)}},
		},
	}
	c := collector.New(collector.Options{Now: clock})
	startPairs(c, cfg)
	for i, r := range []probe.Result{
		{Probe: "chat-short", Disposition: probe.Accepted, TTFT: 120 * time.Millisecond, TPOT: 30 * time.Millisecond, E2EL: 2 * time.Second,
			ITLs: []time.Duration{20 * time.Millisecond, 40 * time.Millisecond}, PromptTokens: 20, OutputTokens: 64,
			Phases: probe.PhaseTimes{probe.PhaseConnect: time.Millisecond, probe.PhaseHeaders: 3 * time.Millisecond, probe.PhaseFirstToken: 117 * time.Millisecond, probe.PhaseDecode: 1880 * time.Millisecond},
			Server: &probe.ServerTiming{QueueTime: 10 * time.Millisecond, TTFT: 90 * time.Millisecond}},
		{Probe: "chat-short", Disposition: probe.LatencyFailure, Reason: probe.ReasonLatency, SLOViolations: []string{probe.SLOTTFT},
			TTFT: 450 * time.Millisecond, E2EL: 3 * time.Second, TPOT: 40 * time.Millisecond, PromptTokens: 20, OutputTokens: 64},
		{Probe: "completions", Disposition: probe.QualityFailure, Reason: probe.ReasonQuality, QualityFailures: []string{probe.CheckExpect},
			TTFT: 80 * time.Millisecond, E2EL: 900 * time.Millisecond, PromptTokens: 12, OutputTokens: 16},
		{Probe: "completions", Disposition: probe.ClientTimeout, Reason: probe.ReasonTimeout},
	} {
		r.Target, r.Seq, r.Sent, r.Lag = "llama-8b", uint64(i+1), fixedNow, time.Millisecond
		c.Offered(config.PairKey{Target: r.Target, Probe: r.Probe})
		c.Finished(&r)
	}
	c.Offered(config.PairKey{Target: "llama-8b", Probe: "completions"}) // one still in flight

	h := newHarness(t, ScraperOptions{})
	h.Apply(cfg)
	h.wait(t, "llama-8b")
	self := collector.NewSelfMetrics(func() float64 { return 0 })
	self.SetReload(true, fixedNow)

	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c, h, self)
	return reg
}

// exposition renders reg in the text format, without the build info (its
// labels depend on the Go version and the build).
func exposition(t *testing.T, reg prometheus.Gatherer) []byte {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	mfs = slices.DeleteFunc(mfs, func(mf *dto.MetricFamily) bool { return mf.GetName() == "vllm_prober_build_info" })
	var buf bytes.Buffer
	if err := promtext.Encode(&buf, mfs); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestGoldenExposition(t *testing.T) {
	got := exposition(t, exampleRegistry(t))
	const path = "testdata/golden.prom"
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("exposition differs from %s (run go test -run TestGoldenExposition -update and review the diff):\n%s", path, got)
	}
}
