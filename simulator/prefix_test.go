package simulator

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"
)

// TestPrefixCacheHits checks the prefix cache's accounting against a hand
// count: requests that share their first tokens hit the cache for every
// full 16-token block of the shared part, and the hit counters rise by
// exactly that.
func TestPrefixCacheHits(t *testing.T) {
	_, url := startTest(t, fastOptions())
	rng := rand.New(rand.NewPCG(7, 7))
	ids := func(n int) []int {
		out := make([]int, n)
		for i := range out {
			out[i] = 1000 + rng.IntN(50000)
		}
		return out
	}
	shared := ids(256)
	with := func(prefix []int, suffix int) []int { return append(append([]int{}, prefix...), ids(suffix)...) }
	counters := func() (queries, hits, cached float64) {
		mfs := scrape(t, url)
		get := func(name string) float64 { return mfs[name].Metric[0].GetCounter().GetValue() }
		return get("vllm:prefix_cache_queries_total"), get("vllm:prefix_cache_hits_total"), get("vllm:prompt_tokens_cached_total")
	}
	steps := []struct {
		name   string
		prompt []int
		hits   float64
	}{
		{"first request fills the cache", with(shared, 40), 0},
		{"same 256-token prefix, other suffix", with(shared, 40), 256},
		{"again, a longer suffix", with(shared, 100), 256},
		{"250 shared tokens hit 15 whole blocks", with(shared[:250], 60), 240},
		{"other prefix", ids(300), 0},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			q0, h0, c0 := counters()
			body, _ := json.Marshal(map[string]any{"prompt": st.prompt, "max_tokens": 2})
			if resp, b := post(t, url+"/v1/completions", string(body)); resp.StatusCode != 200 {
				t.Fatalf("status %d: %s", resp.StatusCode, b)
			}
			q1, h1, c1 := counters()
			if got := fmt.Sprint(q1-q0, h1-h0, c1-c0); got != fmt.Sprint(float64(len(st.prompt)), st.hits, st.hits) {
				t.Errorf("queries, hits, cached rose by %s; want %d %g %g", got, len(st.prompt), st.hits, st.hits)
			}
		})
	}
}
