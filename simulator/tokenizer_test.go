package simulator

import (
	"fmt"
	"slices"
	"strings"
	"testing"

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
