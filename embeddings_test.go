package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"

	"github.com/vllm-prober/vllm-prober/collector/metricname"
	"github.com/vllm-prober/vllm-prober/internal/promtext"
	"github.com/vllm-prober/vllm-prober/internal/testfile"
	"github.com/vllm-prober/vllm-prober/probe"
	"github.com/vllm-prober/vllm-prober/simulator/simtest"
)

// embeddingsConfig probes the simulator's /v1/embeddings twice: "embed"
// expects the simulator's 384 values, "embed-512" expects 512.
const embeddingsConfig = `
global:
  ledger: {path: %q}
targets:
  - name: sim
    url: %s
    metrics_path: ""
probes:
  - name: embed
    api: embeddings
    rate: 20
    burstiness: inf
    timeout: 5s
    workload: {random: {input_tokens: 64, range_ratio: 0.5, seed: 3}}
    slo: {e2el: 5s}
    quality: {embedding_dim: 384}
  - name: embed-512
    api: embeddings
    rate: 20
    burstiness: inf
    timeout: 5s
    workload:
      prompts: [{prompt: the capital of France}, {prompt: a probe of an embedding model}]
    quality: {embedding_dim: 512}
`

// TestEmbeddingsAgainstSimulator runs the daemon in-process with two
// embeddings probes against the simulator (--embedding-dim 384) and
// checks the ledger by hand count against /metrics: the 384-value vectors
// are accepted, the probe that expects 512 fails every answer with check
// embedding_dim, and no embeddings request feeds the TTFT or ITL histograms.
func TestEmbeddingsAgainstSimulator(t *testing.T) {
	_, simURL := startSimulatorServer(t, simtest.EmbeddingDim(384))
	dir := t.TempDir()
	path := filepath.Join(dir, "ledger.jsonl")
	cfgPath := testfile.Write(t, dir, "c.yml", fmt.Sprintf(embeddingsConfig, path, simURL))
	d := startInProcess(t, cfgPath)
	waitFor(t, "20 answers of each probe", func() bool {
		n := countsBy(promtext.Families(t, d.reg)[metricname.Requests], "probe")
		return n["embed"] >= 20 && n["embed-512"] >= 20
	})
	recs := stopAndReadLedger(t, d, path)
	fams := promtext.Families(t, d.reg)

	// The hand count: per probe, disposition and flags.
	count := map[string]int{}
	for _, r := range recs {
		if r.Disposition == probe.Cancelled {
			continue // in flight at shutdown
		}
		count[fmt.Sprint(r.Probe, " ", r.Disposition, " ", r.Flags)]++
		if r.TTFTS != nil || r.TPOTS != nil || r.ITLMaxS != nil || r.OutputTokens != 0 || r.Chunks != 0 {
			t.Errorf("record %s/%d: ttft %v, tpot %v, itl max %v, %d output tokens, %d chunks; want none of them",
				r.Probe, r.Seq, r.TTFTS, r.TPOTS, r.ITLMaxS, r.OutputTokens, r.Chunks)
		}
		if r.E2ELS == nil || r.PromptTokens == 0 || r.HTTPStatus != 200 {
			t.Errorf("record %s/%d: e2el %v, %d prompt tokens, status %d; want an answer measured",
				r.Probe, r.Seq, r.E2ELS, r.PromptTokens, r.HTTPStatus)
		}
	}
	accepted := count["embed accepted []"]
	failed := count["embed-512 quality_failure [check:embedding_dim]"]
	if accepted < 20 || failed < 20 || len(count) != 2 {
		t.Fatalf("ledger dispositions %v, want only accepted embed and embed-512 failing check embedding_dim", count)
	}

	byCheck := countsBy(fams[metricname.QualityFailures], "probe", "check")
	if got := byCheck["embed-512/embedding_dim"]; got != failed {
		t.Errorf("quality failures of check embedding_dim: %d on /metrics, %d in the ledger", got, failed)
	}
	if got := byCheck["embed/embedding_dim"]; got != 0 {
		t.Errorf("embed: %d embedding_dim failures on /metrics, want 0", got)
	}
	for _, name := range []string{metricname.TTFT, metricname.ITL, metricname.TPOT} {
		if n := histogramCounts(fams[name]); n["embed"]+n["embed-512"] != 0 {
			t.Errorf("%s observed %v, want nothing from embeddings probes", name, n)
		}
	}
	if n := histogramCounts(fams[metricname.E2EL]); n["embed"] != accepted || n["embed-512"] != failed {
		t.Errorf("E2EL observations %v, want the %d and %d answers of the ledger", n, accepted, failed)
	}
}

// countsBy sums a counter family's values by the values of the labels
// named, joined with "/".
func countsBy(f *dto.MetricFamily, labels ...string) map[string]int {
	out := map[string]int{}
	for _, m := range f.GetMetric() {
		l := promtext.Labels(m)
		values := make([]string, len(labels))
		for i, k := range labels {
			values[i] = l[k]
		}
		out[strings.Join(values, "/")] += int(m.GetCounter().GetValue())
	}
	return out
}

// histogramCounts returns a histogram family's observation count by probe.
func histogramCounts(f *dto.MetricFamily) map[string]int {
	out := map[string]int{}
	for _, m := range f.GetMetric() {
		out[promtext.Labels(m)["probe"]] += int(m.GetHistogram().GetSampleCount())
	}
	return out
}
