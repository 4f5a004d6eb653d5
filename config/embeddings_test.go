package config

import (
	"testing"
	"time"
)

func TestEmbeddingsProbe(t *testing.T) {
	cfg := mustParse(t, validTarget+`
probes:
  - name: embed
    api: embeddings
    rate: 2
    timeout: 5s
    workload:
      random: {input_tokens: 128}
    slo: {e2el: 1s}
    quality: {embedding_dim: 384}
  - name: embed-prompts
    api: embeddings
    rate: 1
    workload:
      prompts: [{prompt: the capital of France}]
`)
	for _, p := range cfg.Probes {
		t.Run(p.Name, func(t *testing.T) {
			// The generation defaults (finish_reasons stop/length, at
			// least one output token) would fail every embeddings request.
			if p.Quality.FinishReasons != nil || p.Quality.MinOutputTokens != 0 {
				t.Errorf("finish_reasons %v, min_output_tokens %d, want none: embeddings generate no tokens",
					p.Quality.FinishReasons, p.Quality.MinOutputTokens)
			}
		})
	}
	p := cfg.Probes[0]
	if p.API != APIEmbeddings || p.Quality.EmbeddingDim != 384 || time.Duration(p.SLO.E2EL) != time.Second {
		t.Errorf("probe = api %q, embedding_dim %d, slo.e2el %s", p.API, p.Quality.EmbeddingDim, p.SLO.E2EL)
	}
	again := mustParse(t, cfg.String())
	if again.String() != cfg.String() {
		t.Errorf("round trip changed the config:\n%s\nvs\n%s", cfg, again)
	}
}
