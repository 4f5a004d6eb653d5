package bench

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/common/model"

	"github.com/vllm-prober/vllm-prober/config"
	"github.com/vllm-prober/vllm-prober/probe"
	"github.com/vllm-prober/vllm-prober/simulator"
)

// saturatingSim is a simulator with a batch of two sequences and fast
// steps: it serves a few tens of short requests per second, then queues.
func saturatingSim(t *testing.T) string {
	url, _ := startSim(t, func(o *simulator.Options) {
		o.MaxNumSeqs = 2
		o.PrefillBase, o.PrefillPerToken = 2*time.Millisecond, 10*time.Microsecond
		o.DecodeBase, o.DecodePerSeq = 2*time.Millisecond, 500*time.Microsecond
	})
	return url
}

func TestCapacityStableAcrossSeeds(t *testing.T) {
	stairs := []float64{20, 40, 80, 160}
	var rated []float64
	for _, seed := range []int64{1, 2} {
		url := saturatingSim(t)
		w := benchTestOptions(url)
		w.RandomInputLen, w.RandomOutputLen, w.Goodput = 32, 8, Goodput{E2EL: 150 * time.Millisecond, hasE2EL: true}
		dir := t.TempDir()
		var stdout bytes.Buffer
		out, err := Capacity(context.Background(), CapacityOptions{Workload: w, Rates: stairs, Repeats: 2,
			Duration: 600 * time.Millisecond, Warmup: 200 * time.Millisecond, Burstiness: 1, Seed: seed,
			Rule: PassRule{MinAcceptance: 0.99, Percentile: 99}, RuleFromProbe: true, OutputDir: dir, Stamp: "t"},
			Env{Stdout: &stdout})
		if err != nil {
			t.Fatal(err)
		}
		s := out.Search
		t.Logf("seed %d:\n%s", seed, stdout.String())
		if !s.Saturated || s.Rated <= 0 {
			t.Fatalf("seed %d: rated %v saturated %v: the simulator should saturate inside the staircase", seed, s.Rated, s.Saturated)
		}
		rated = append(rated, s.Rated)
		checkCapacityFiles(t, out)
	}
	// One staircase step at the rated load: the gap to the next stair.
	step := 0.0
	for i := range stairs[:len(stairs)-1] {
		if stairs[i] <= rated[0] && rated[0] < stairs[i+1] {
			step = stairs[i+1] - stairs[i]
		}
	}
	if d := rated[0] - rated[1]; d > step || -d > step {
		t.Errorf("rated capacity %v vs %v across seeds: differ by more than one staircase step (%v)", rated[0], rated[1], step)
	}
}

// checkCapacityFiles checks the report, the chart and the ledger exist
// and agree.
func checkCapacityFiles(t *testing.T, out *CapacityOutcome) {
	t.Helper()
	b, err := os.ReadFile(out.SVGPath)
	if err != nil {
		t.Fatal(err)
	}
	svgDoc(t, b)
	if _, err := os.Stat(out.JSONPath); err != nil {
		t.Error(err)
	}
	recs, _, err := probe.ReadLedger(out.LedgerOf)
	if err != nil {
		t.Fatal(err)
	}
	offered := 0
	for _, r := range out.Search.Repeats {
		offered += r.Metrics.Offered
	}
	if len(recs) != offered {
		t.Errorf("ledger holds %d records, the levels offered %d", len(recs), offered)
	}
}

func TestCapacityConfigProbe(t *testing.T) {
	url := saturatingSim(t)
	cfg := &config.Config{
		Targets: []config.Target{{Name: "other", URL: "http://127.0.0.1:1", Probes: []string{"none"}}, {Name: "sim", URL: url}},
		Probes: []config.Probe{{Name: "cmpl", API: config.APICompletions, Rate: 1, Burstiness: 1, MaxInFlight: 6,
			Timeout: model.Duration(5 * time.Second), Request: config.Request{MaxTokens: 8, IgnoreEOS: true},
			Workload: config.Workload{Random: &config.RandomWorkload{InputTokens: 16, OutputTokens: 8}},
			SLO:      config.SLO{E2EL: model.Duration(150 * time.Millisecond)},
			Quality:  config.Quality{FinishReasons: []string{"stop", "length"}, MinOutputTokens: 1}, Objective: 0.99}},
	}
	dir := t.TempDir()
	var stdout bytes.Buffer
	out, err := Capacity(context.Background(), CapacityOptions{Config: cfg, ProbeName: "cmpl", Rates: []float64{10, 400},
		Repeats: 1, Resolution: 1000, Duration: 500 * time.Millisecond, Rule: PassRule{MinAcceptance: 0.99, Percentile: 99}, RuleFromProbe: true,
		OutputDir: dir, Stamp: "c"}, Env{Stdout: &stdout})
	if err != nil {
		t.Fatal(err)
	}
	t.Log(stdout.String())
	if out.Search.Rule != "acceptance >= 0.9900 and p99 e2el <= 150ms" {
		t.Errorf("rule %q: want the probe's SLO", out.Search.Rule)
	}
	if len(out.Search.Repeats) == 0 || !out.Search.Repeats[0].Pass || out.Search.Repeats[1].Pass {
		t.Fatalf("want 10 req/s to pass and 400 req/s to fail against a two-sequence batch")
	}
	if n := out.Search.Repeats[1].Metrics.Reasons[probe.ReasonInFlightCap]; n == 0 {
		t.Errorf("400 req/s: no request ended cancelled/in_flight_cap, want the probe's max_in_flight 6 to apply")
	}
	if _, err := os.Stat(filepath.Join(dir, "capacity-c.svg")); err != nil {
		t.Error(err)
	}
}
