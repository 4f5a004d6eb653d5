package simulator

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/vllm-prober/vllm-prober/internal/promtext"
	"github.com/vllm-prober/vllm-prober/simulator/wire"
)

// TestTokenizeAgreesWithUsage checks that /tokenize, /detokenize and the
// usage of a request agree.
func TestTokenizeAgreesWithUsage(t *testing.T) {
	_, url := startTest(t, fastOptions())
	cases := []struct {
		name     string
		tokenize string // /tokenize body
		generate string // request body whose prompt_tokens must match
		path     string
	}{
		{"completion prompt", `{"prompt":"The quick brown fox, jumps!"}`, `{"prompt":"The quick brown fox, jumps!","max_tokens":1}`, "/v1/completions"},
		{"chat messages", `{"messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"Hi there"}]}`,
			`{"messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"Hi there"}],"max_tokens":1}`, "/v1/chat/completions"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, b := post(t, url+"/tokenize", tc.tokenize)
			var tok struct {
				Count       int   `json:"count"`
				MaxModelLen int   `json:"max_model_len"`
				Tokens      []int `json:"tokens"`
			}
			decodeJSON(t, b, &tok)
			_, b = post(t, url+tc.path, tc.generate)
			var r wire.CmplResponse
			decodeJSON(t, b, &r)
			if tok.Count != len(tok.Tokens) || tok.Count != r.Usage.PromptTokens || tok.MaxModelLen != 8192 {
				t.Errorf("tokenize %+v, usage prompt_tokens %d", tok, r.Usage.PromptTokens)
			}
			ids, _ := idList(tok.Tokens)
			_, b = post(t, url+"/detokenize", `{"tokens":`+ids+`}`)
			var de struct {
				Prompt string `json:"prompt"`
			}
			decodeJSON(t, b, &de)
			if !strings.Contains(tc.tokenize, strings.ReplaceAll(de.Prompt, "\n", "")) && !strings.Contains(de.Prompt, "Hi there") {
				t.Errorf("detokenize gave %q", de.Prompt)
			}
			// Round trip: the ids of the detokenized text are the same ids.
			_, b = post(t, url+"/tokenize", `{"prompt":`+quote(de.Prompt)+`}`)
			var again struct {
				Tokens []int `json:"tokens"`
			}
			decodeJSON(t, b, &again)
			if !slices.Equal(again.Tokens, tok.Tokens) {
				t.Errorf("round trip ids %v, want %v", again.Tokens, tok.Tokens)
			}
		})
	}
	t.Run("token id prompt counts ids", func(t *testing.T) {
		_, b := post(t, url+"/v1/completions", `{"prompt":[9,8,7,6,5,4,3],"max_tokens":1}`)
		var r wire.CmplResponse
		decodeJSON(t, b, &r)
		if r.Usage.PromptTokens != 7 {
			t.Errorf("prompt_tokens %d, want 7", r.Usage.PromptTokens)
		}
	})
}

func idList(ids []int) (string, error) {
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = fmt.Sprint(id)
	}
	return "[" + strings.Join(parts, ",") + "]", nil
}

func quote(s string) string { return string(wire.Compact(s)) }

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
		mfs := promtext.Scrape(t, url+"/metrics")
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
