package simulator

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

func TestSplit(t *testing.T) {
	cases := []struct {
		text string
		want []string
	}{
		{"Hello, world!", []string{"Hello", ",", " world", "!"}},
		{"What is 12*12?", []string{"What", " is", " 12", "*", "12", "?"}},
		{"a  b\n\nc ", []string{"a", " ", " b", "\n\n", "c", " "}},
		{" leading", []string{" leading"}},
		{"naïve café", []string{"naïve", " café"}},
		{"", nil},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("%q", tc.text), func(t *testing.T) {
			got := split(tc.text)
			if !slices.Equal(got, tc.want) {
				t.Errorf("split = %q, want %q", got, tc.want)
			}
			if strings.Join(got, "") != tc.text {
				t.Errorf("pieces do not join back to the text")
			}
		})
	}
}

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
			var r cmplResponse
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
		var r cmplResponse
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

func quote(s string) string { return string(compact(s)) }

// TestAnswerRule checks the deterministic answers quality probes rely on.
func TestAnswerRule(t *testing.T) {
	cases := []struct {
		prompt string
		wrong  bool
		want   string
	}{
		{"What is 12*12? Digits only.", false, "144."},
		{"What is 12*12? Digits only.", true, "295."},
		{"Compute 7 + 5", false, "12."},
		{"and 9 - 10", false, "-1."},
		{"100/7", false, "14."},
		{"1/0", false, "undefined."},
		{"Tell me a story", false, ""},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("%s/%v", tc.prompt, tc.wrong), func(t *testing.T) {
			if got := answerText(tc.prompt, tc.wrong); got != tc.want {
				t.Errorf("answer %q, want %q", got, tc.want)
			}
		})
	}
}
