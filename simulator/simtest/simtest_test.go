package simtest

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/vllm-prober/vllm-prober/simulator"
)

// TestStartWithEdits checks that the edits reach the running simulator:
// reasoning deltas, the embedding length and the initial faults.
func TestStartWithEdits(t *testing.T) {
	o := simulator.DefaultOptions()
	o.PrefillBase, o.DecodeBase, o.Jitter = time.Millisecond, time.Millisecond, 0
	sim, url := Start(t, o, Reasoning(2), EmbeddingDim(3), Faults(simulator.Faults{OutputVariant: 4}))
	if f := sim.Faults(); f.OutputVariant != 4 {
		t.Errorf("faults %+v, want output_variant 4", f)
	}
	post := func(path, body string) string {
		resp, err := http.Post(url+path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	chat := post("/v1/chat/completions", `{"messages":[{"role":"user","content":"What is 2+2?"}],"stream":true,"stream_options":{"include_usage":true}}`)
	if strings.Count(chat, `"reasoning":`) != 2 || !strings.Contains(chat, `"reasoning_tokens":2`) {
		t.Errorf("chat stream %s: want 2 reasoning deltas", chat)
	}
	var emb struct {
		Data []struct {
			Embedding []float64 `json:"embedding"`
		} `json:"data"`
	}
	body := post("/v1/embeddings", `{"input":"hi"}`)
	if err := json.Unmarshal([]byte(body), &emb); err != nil || len(emb.Data) != 1 || len(emb.Data[0].Embedding) != 3 {
		t.Errorf("embedding %s: want one vector of 3 values (%v)", body, err)
	}
}
