package workload

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/vllm-prober/vllm-prober/config"
	"github.com/vllm-prober/vllm-prober/internal/testfile"
)

// TestRandomEmbeddingsWorkload: an embeddings probe sends text, its length
// calibrated through the tokenizer as chat prompts are, and the same text a
// chat probe of the same seed sends.
func TestRandomEmbeddingsWorkload(t *testing.T) {
	calls := 0
	count := func(_ context.Context, _, text string) (int, error) {
		calls++
		return 2 * len(strings.Fields(text)), nil
	}
	emb, err := New(randomProbe(config.APIEmbeddings, 100, 0, 0, 7), count)
	if err != nil {
		t.Fatal(err)
	}
	chat, err := New(randomProbe(config.APIChat, 100, 10, 0, 7), count)
	if err != nil {
		t.Fatal(err)
	}
	for seq := uint64(1); seq <= 3; seq++ {
		it := emb.ItemAt(context.Background(), "m", seq)
		text, ok := it.Prompt.(string)
		if !ok || len(it.Messages) != 0 || it.MaxTokens != 0 {
			t.Fatalf("item %d = %+v, want a text prompt alone", seq, it)
		}
		if n := len(strings.Fields(text)); n != 50 {
			t.Fatalf("item %d: %d words, want 50 (100 tokens at two per word)", seq, n)
		}
		if want := chat.ItemAt(context.Background(), "m", seq).Messages[0].Content; text != want {
			t.Fatalf("item %d = %q, want the chat probe's text %q", seq, text, want)
		}
	}
	if calls != 2 {
		t.Fatalf("tokenizer called %d times, want once per workload", calls)
	}
}

// TestEmbeddingsPromptsAndFile: fixed prompts go as they are; a dataset's
// messages are joined as for completions.
func TestEmbeddingsPromptsAndFile(t *testing.T) {
	path := testfile.Temp(t, "prompts.jsonl", `{"prompt": "p1"}
{"messages": [{"role": "system", "content": "s"}, {"role": "user", "content": "m1"}]}
{"conversations": [{"from": "human", "value": "h1"}, {"from": "gpt", "value": "answer"}]}
`)
	p := config.Probe{API: config.APIEmbeddings, Request: config.Request{MaxTokens: 64}, Workload: config.Workload{File: path}}
	w, err := New(p, nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []any
	for range 3 {
		got = append(got, w.Next(context.Background(), "m").Prompt)
	}
	if want := []any{"p1", "s\nm1", "h1"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("prompts %q, want %q", got, want)
	}
}
