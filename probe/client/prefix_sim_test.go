package client

import (
	"context"
	"net/http"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/vllm-prober/vllm-prober/config"
	"github.com/vllm-prober/vllm-prober/probe"
)

// simPrefixHits reads the simulator's vllm:prefix_cache_hits_total.
func simPrefixHits(t *testing.T, simURL string) float64 {
	t.Helper()
	resp, err := http.Get(simURL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, m := range fams["vllm:prefix_cache_hits_total"].GetMetric() {
		sum += m.GetCounter().GetValue()
	}
	return sum
}

// TestRandomPrefixHitsSimulatorCache: a random probe with prefix_tokens
// sends prompts whose shared prefix the simulator's prefix cache serves
// from the second request on, while a cache-busting probe without one
// gets no hits (the simulator caches whole 16-token blocks).
func TestRandomPrefixHitsSimulatorCache(t *testing.T) {
	const n, prefix = 10, 64
	for _, api := range []string{config.APICompletions, config.APIChat} {
		t.Run(api, func(t *testing.T) {
			_, simURL := startSimulator(t, nil)
			hits := func(prefixTokens int) float64 {
				p := rqProbe(api)
				p.Request.MaxTokens = 0
				p.Workload = config.Workload{Random: &config.RandomWorkload{InputTokens: 48, OutputTokens: 4, Seed: 3, PrefixTokens: prefixTokens}}
				tg := rqTarget(simURL)
				tg.Model = ""
				r := newTestRequester(t, tg, p, Options{})
				before := simPrefixHits(t, simURL)
				for seq := uint64(1); seq <= n; seq++ {
					if res := doRequest(context.Background(), r, seq); res.Disposition != probe.Accepted {
						t.Fatalf("request %d: %s/%s %s", seq, res.Disposition, res.Reason, res.Error)
					}
				}
				return simPrefixHits(t, simURL) - before
			}
			busting := hits(0)
			warm := hits(prefix)
			t.Logf("prefix cache hits: %v with a %d-token prefix, %v without", warm, prefix, busting)
			// From the second request on, the prefix's whole blocks hit.
			if min := float64((n - 1) * (prefix / 16 * 16)); warm < min {
				t.Errorf("prefix probe: %v prefix cache hits, want at least %v", warm, min)
			}
			if busting >= warm/4 {
				t.Errorf("cache-busting probe: %v hits, want far fewer than the prefix probe's %v", busting, warm)
			}
		})
	}
}
