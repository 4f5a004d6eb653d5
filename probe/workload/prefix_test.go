package workload

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/vllm-prober/vllm-prober/config"
)

func prefixProbe(api string, prefix int, seed int64) config.Probe {
	p := randomProbe(api, 40, 8, 0.5, seed)
	p.Workload.Random.PrefixTokens = prefix
	return p
}

// TestRandomPrefixCompletions: every prompt starts with the same
// prefix_tokens ids, drawn from the seed alone; the rest differs from
// request to request and keeps the input_tokens length range, as vLLM's
// random dataset adds --random-prefix-len to --random-input-len.
func TestRandomPrefixCompletions(t *testing.T) {
	const prefix = 32
	ctx := context.Background()
	items := func(seed int64, byIndex bool) [][]int {
		w, err := New(prefixProbe(config.APICompletions, prefix, seed), nil)
		if err != nil {
			t.Fatal(err)
		}
		var out [][]int
		for seq := uint64(1); seq <= 50; seq++ {
			it := w.Next(ctx, "m")
			if byIndex {
				it = w.ItemAt(ctx, "m", seq)
			}
			ids := it.Prompt.([]int)
			if it.PromptTokens != len(ids) || len(ids) < prefix+20 || len(ids) > prefix+60 {
				t.Fatalf("prompt of %d ids (prompt tokens %d), want %d prefix + [20, 60]", len(ids), it.PromptTokens, prefix)
			}
			out = append(out, ids)
		}
		return out
	}
	for _, byIndex := range []bool{false, true} {
		got := items(5, byIndex)
		rests := map[string]bool{}
		for i, ids := range got {
			if !reflect.DeepEqual(ids[:prefix], got[0][:prefix]) {
				t.Fatalf("byIndex %v: prompt %d starts with %v, want the shared prefix %v", byIndex, i, ids[:prefix], got[0][:prefix])
			}
			rests[fmt.Sprint(ids[prefix:])] = true
		}
		if len(rests) < 45 {
			t.Errorf("byIndex %v: %d different rests in 50 prompts, want them random", byIndex, len(rests))
		}
		if again := items(5, byIndex); !reflect.DeepEqual(again, got) {
			t.Errorf("byIndex %v: the same seed drew other prompts", byIndex)
		}
		if other := items(6, byIndex); reflect.DeepEqual(other[0][:prefix], got[0][:prefix]) {
			t.Errorf("byIndex %v: seeds 5 and 6 share the prefix", byIndex)
		}
	}
	// The prefix does not move what the rest draws.
	w, err := New(randomProbe(config.APICompletions, 40, 8, 0.5, 5), nil)
	if err != nil {
		t.Fatal(err)
	}
	plain := w.Next(ctx, "m").Prompt.([]int)
	if with := items(5, false)[0]; !reflect.DeepEqual(with[prefix:], plain) {
		t.Error("with a prefix, the rest differs from the prompt without one")
	}
}

// TestRandomPrefixChat: chat prompts start with the same words, as many as
// prefix_tokens at the calibrated tokens per word.
func TestRandomPrefixChat(t *testing.T) {
	ctx := context.Background()
	count := func(_ context.Context, _, text string) (int, error) {
		return 2 * len(strings.Fields(text)), nil // two tokens per word
	}
	w, err := New(prefixProbe(config.APIChat, 64, 9), count)
	if err != nil {
		t.Fatal(err)
	}
	var first []string
	rests := map[string]bool{}
	for seq := uint64(1); seq <= 20; seq++ {
		words := strings.Fields(w.ItemAt(ctx, "m", seq).Messages[0].Content)
		if first == nil {
			first = words
		}
		if len(words) < 32+10 || !reflect.DeepEqual(words[:32], first[:32]) {
			t.Fatalf("request %d: %d words starting %v, want the 32-word prefix %v", seq, len(words), words[:min(32, len(words))], first[:32])
		}
		rests[strings.Join(words[32:], " ")] = true
	}
	if len(rests) != 20 {
		t.Errorf("%d different rests in 20 prompts, want 20", len(rests))
	}
}
