package simulator

import (
	"fmt"
	"strings"
	"testing"

	"github.com/vllm-prober/vllm-prober/simulator/wire"
)

// TestOutputVariant checks output drift: POST /sim/faults output_variant
// changes the text of every prompt for later requests, keeps arithmetic
// answers right, and variant 0 gives the original text back.
func TestOutputVariant(t *testing.T) {
	_, url := startTest(t, fastOptions())
	prompts := []string{"Tell me a story", "Describe the sea", "hello", "What is 12*12?", "List three colours"}
	texts := func() []string {
		var out []string
		for _, p := range prompts {
			_, b := post(t, url+"/v1/completions", fmt.Sprintf(`{"prompt":%q,"max_tokens":12}`, p))
			var r wire.CmplResponse
			decodeJSON(t, b, &r)
			out = append(out, r.Choices[0].Text)
		}
		return out
	}
	setVariant := func(v int) {
		if resp, b := post(t, url+"/sim/faults", fmt.Sprintf(`{"output_variant":%d}`, v)); resp.StatusCode != 200 {
			t.Fatalf("set variant %d: %d %s", v, resp.StatusCode, b)
		}
	}
	original := texts()
	if original[3] != "144." {
		t.Fatalf("variant 0 answer %q, want 144.", original[3])
	}
	seen := map[string]int{}
	for _, v := range []int{1, 2, 9} {
		setVariant(v)
		got := texts()
		for i := range prompts {
			if got[i] == original[i] {
				t.Errorf("variant %d: %q still answers %q", v, prompts[i], got[i])
			}
			if prev, ok := seen[got[i]]; ok && i != 3 {
				t.Errorf("variant %d: %q answers %q as variant %d did", v, prompts[i], got[i], prev)
			}
			seen[got[i]] = v
		}
		if !strings.HasSuffix(got[3], " 144.") {
			t.Errorf("variant %d: arithmetic answer %q lost its number", v, got[3])
		}
	}
	setVariant(0)
	if got := texts(); strings.Join(got, "|") != strings.Join(original, "|") {
		t.Errorf("variant 0 again gives %q, want %q", got, original)
	}
}
