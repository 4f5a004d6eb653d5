package judge

import (
	"slices"
	"testing"
	"time"

	"github.com/prometheus/common/model"

	"github.com/vllm-prober/vllm-prober/config"
	"github.com/vllm-prober/vllm-prober/probe"
)

func TestJudgeEmbedding(t *testing.T) {
	p := config.Probe{
		API:     config.APIEmbeddings,
		SLO:     config.SLO{E2EL: model.Duration(time.Second)},
		Quality: config.Quality{Model: "e5", EmbeddingDim: 384},
	}
	tests := []struct {
		name       string
		edit       func(r *probe.Result)
		dim        int // quality.embedding_dim
		want       probe.Disposition
		wantSLO    []string
		wantChecks []string
	}{
		{name: "good vector", dim: 384, want: probe.Accepted},
		{name: "short vector", dim: 384, edit: func(r *probe.Result) { r.EmbeddingDim = 383 },
			want: probe.QualityFailure, wantChecks: []string{probe.CheckEmbeddingDim}},
		{name: "long vector", dim: 384, edit: func(r *probe.Result) { r.EmbeddingDim = 512 },
			want: probe.QualityFailure, wantChecks: []string{probe.CheckEmbeddingDim}},
		{name: "a value not finite", dim: 384, edit: func(r *probe.Result) { r.EmbeddingNotFinite = 1 },
			want: probe.QualityFailure, wantChecks: []string{probe.CheckEmbeddingDim}},
		{name: "no check without embedding_dim", dim: 0, edit: func(r *probe.Result) { r.EmbeddingDim, r.EmbeddingNotFinite = 7, 7 },
			want: probe.Accepted},
		{name: "wrong model and length", dim: 384, edit: func(r *probe.Result) { r.Model, r.EmbeddingDim = "other", 1 },
			want: probe.QualityFailure, wantChecks: []string{probe.CheckModel, probe.CheckEmbeddingDim}},
		{name: "e2el slo", dim: 384, edit: func(r *probe.Result) { r.E2EL = 2 * time.Second },
			want: probe.LatencyFailure, wantSLO: []string{probe.SLOE2EL}},
		// A timeout has no vector to check, and no TTFT to violate.
		{name: "timeout", dim: 384, edit: func(r *probe.Result) {
			r.Disposition, r.Reason, r.E2EL, r.EmbeddingDim, r.Elapsed = probe.ClientTimeout, probe.ReasonTimeout, 0, 0, 3*time.Second
		}, want: probe.ClientTimeout, wantSLO: []string{probe.SLOE2EL}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pp := p
			pp.Quality.EmbeddingDim = tc.dim
			res := &probe.Result{Embeddings: true, Model: "e5", E2EL: 100 * time.Millisecond, Elapsed: 100 * time.Millisecond,
				PromptTokens: 8, EmbeddingDim: 384, HTTPStatus: 200}
			if tc.edit != nil {
				tc.edit(res)
			}
			Request(pp, nil, res)
			if res.Disposition != tc.want {
				t.Errorf("disposition = %s/%s, want %s", res.Disposition, res.Reason, tc.want)
			}
			if !slices.Equal(res.SLOViolations, tc.wantSLO) {
				t.Errorf("SLO violations = %v, want %v", res.SLOViolations, tc.wantSLO)
			}
			if !slices.Equal(res.QualityFailures, tc.wantChecks) {
				t.Errorf("quality failures = %v, want %v", res.QualityFailures, tc.wantChecks)
			}
		})
	}
}
