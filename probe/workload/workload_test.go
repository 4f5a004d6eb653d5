package workload

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/vllm-prober/vllm-prober/config"
	"github.com/vllm-prober/vllm-prober/internal/testfile"
)

func randomProbe(api string, in, out int, ratio float64, seed int64) config.Probe {
	return config.Probe{
		Name: "p", API: api, Request: config.Request{MaxTokens: 64},
		Workload: config.Workload{Random: &config.RandomWorkload{InputTokens: in, OutputTokens: out, RangeRatio: ratio, Seed: seed}},
	}
}

func TestRandomCompletionsWorkload(t *testing.T) {
	tests := []struct {
		name            string
		in, out         int
		ratio           float64
		inLo, inHi      int
		outLo, outHi    int
		wantBothEndsHit bool
	}{
		{name: "exact", in: 128, out: 16, inLo: 128, inHi: 128, outLo: 16, outHi: 16},
		{name: "range", in: 10, out: 5, ratio: 0.5, inLo: 5, inHi: 15, outLo: 2, outHi: 8, wantBothEndsHit: true},
		{name: "low bound at least one", in: 1, out: 1, ratio: 0.9, inLo: 1, inHi: 2, outLo: 1, outHi: 2, wantBothEndsHit: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w, err := New(randomProbe(config.APICompletions, tc.in, tc.out, tc.ratio, 7), nil)
			if err != nil {
				t.Fatal(err)
			}
			seen := map[int]bool{}
			for range 2000 {
				it := w.Next(context.Background(), "m")
				ids, ok := it.Prompt.([]int)
				if !ok {
					t.Fatalf("prompt is %T, want token ids", it.Prompt)
				}
				if len(ids) < tc.inLo || len(ids) > tc.inHi || it.PromptTokens != len(ids) {
					t.Fatalf("prompt of %d tokens (promptTokens %d), want [%d, %d]", len(ids), it.PromptTokens, tc.inLo, tc.inHi)
				}
				if it.MaxTokens < tc.outLo || it.MaxTokens > tc.outHi {
					t.Fatalf("max tokens %d, want [%d, %d]", it.MaxTokens, tc.outLo, tc.outHi)
				}
				for _, id := range ids {
					if id < randomTokenLow || id >= randomTokenHigh {
						t.Fatalf("token id %d out of range", id)
					}
				}
				seen[len(ids)] = true
			}
			if tc.wantBothEndsHit && (!seen[tc.inLo] || !seen[tc.inHi]) {
				t.Fatalf("lengths seen %v, want both %d and %d", seen, tc.inLo, tc.inHi)
			}
		})
	}
}

func TestRandomWorkloadRepeats(t *testing.T) {
	draw := func(seed int64) []Item {
		w, err := New(randomProbe(config.APICompletions, 20, 8, 0.5, seed), nil)
		if err != nil {
			t.Fatal(err)
		}
		var out []Item
		for range 5 {
			out = append(out, w.Next(context.Background(), "m"))
		}
		return out
	}
	if !reflect.DeepEqual(draw(3), draw(3)) {
		t.Fatal("same seed gave different prompts")
	}
	if reflect.DeepEqual(draw(3), draw(4)) {
		t.Fatal("different seeds gave the same prompts")
	}
}

func TestRandomChatWorkloadCalibration(t *testing.T) {
	tests := []struct {
		name      string
		count     TokenCounter
		wantWords int
		wantCalls int
	}{
		{name: "two tokens per word", count: func(_ context.Context, model, text string) (int, error) {
			if model != "m" {
				return 0, errors.New("wrong model")
			}
			return 2 * len(strings.Fields(text)), nil
		}, wantWords: 50, wantCalls: 1},
		{name: "no tokenizer: one word per token", count: func(context.Context, string, string) (int, error) {
			return 0, errors.New("404")
		}, wantWords: 100, wantCalls: 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			calls := 0
			count := func(ctx context.Context, model, text string) (int, error) {
				calls++
				return tc.count(ctx, model, text)
			}
			w, err := New(randomProbe(config.APIChat, 100, 10, 0, 1), count)
			if err != nil {
				t.Fatal(err)
			}
			for range 3 {
				it := w.Next(context.Background(), "m")
				if len(it.Messages) != 1 || it.Messages[0].Role != "user" {
					t.Fatalf("messages = %v", it.Messages)
				}
				if n := len(strings.Fields(it.Messages[0].Content)); n != tc.wantWords {
					t.Fatalf("prompt of %d words, want %d", n, tc.wantWords)
				}
				if it.MaxTokens != 10 {
					t.Fatalf("max tokens %d, want 10", it.MaxTokens)
				}
			}
			if calls != tc.wantCalls {
				t.Fatalf("tokenizer called %d times, want %d", calls, tc.wantCalls)
			}
		})
	}
}

func TestRandomChatCalibrationRetriedAfterCancel(t *testing.T) {
	calls := 0
	count := func(ctx context.Context, _, text string) (int, error) {
		calls++
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		return 2 * len(strings.Fields(text)), nil
	}
	w, err := New(randomProbe(config.APIChat, 100, 10, 0, 1), count)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if it := w.Next(ctx, "m"); len(strings.Fields(it.Messages[0].Content)) != 100 {
		t.Fatalf("uncalibrated prompt of %d words, want 100", len(strings.Fields(it.Messages[0].Content)))
	}
	if it := w.Next(context.Background(), "m"); len(strings.Fields(it.Messages[0].Content)) != 50 || calls != 2 {
		t.Fatalf("prompt of %d words after %d calls, want 50 after 2", len(strings.Fields(it.Messages[0].Content)), calls)
	}
}

func TestPromptsWorkload(t *testing.T) {
	exp := config.Expect{Contains: "144"}
	tests := []struct {
		name string
		api  string
		want []Item
	}{
		{name: "chat", api: config.APIChat, want: []Item{
			{Messages: []config.Message{{Role: "user", Content: "a"}}, MaxTokens: 64, Expect: &exp},
			{Messages: []config.Message{{Role: "system", Content: "s"}, {Role: "user", Content: "b"}}, MaxTokens: 64, Index: 1},
		}},
		{name: "completions", api: config.APICompletions, want: []Item{
			{Prompt: "a", MaxTokens: 64, Expect: &exp},
			{Prompt: "s\nb", MaxTokens: 64, Index: 1},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := config.Probe{API: tc.api, Request: config.Request{MaxTokens: 64}, Workload: config.Workload{Prompts: []config.Prompt{
				{Prompt: "a", Expect: exp},
				{Messages: []config.Message{{Role: "system", Content: "s"}, {Role: "user", Content: "b"}}},
			}}}
			w, err := New(p, nil)
			if err != nil {
				t.Fatal(err)
			}
			for i := range 5 {
				got := w.Next(context.Background(), "m")
				if !reflect.DeepEqual(got, tc.want[i%2]) {
					t.Fatalf("item %d = %+v, want %+v", i, got, tc.want[i%2])
				}
			}
		})
	}
}

func TestFileWorkload(t *testing.T) {
	path := testfile.Temp(t, "prompts.jsonl", `{"prompt": "p1"}

{"messages": [{"role": "user", "content": "m1"}]}
{"conversations": [{"from": "system", "value": "sys"}, {"from": "human", "value": "h1"}, {"from": "gpt", "value": "answer"}]}
`)
	p := config.Probe{API: config.APIChat, Request: config.Request{MaxTokens: 8}, Workload: config.Workload{File: path}}
	w, err := New(p, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"p1", "m1", "h1", "p1"}
	for i, content := range want {
		it := w.Next(context.Background(), "m")
		if len(it.Messages) != 1 || it.Messages[0].Content != content || it.MaxTokens != 8 {
			t.Fatalf("item %d = %+v, want content %q", i, it, content)
		}
	}
}

func TestFileWorkloadErrors(t *testing.T) {
	tests := []struct {
		name string
		body string
		want string // after the file path
	}{
		{name: "bad json", body: "{\"prompt\": \"ok\"}\n{\"prompt\": \n", want: ":2: invalid JSON: unexpected EOF"},
		{name: "no known key", body: "\n\n{\"text\": \"x\"}\n", want: `:3: need one of "prompt", "messages" or "conversations"`},
		{name: "empty prompt", body: `{"prompt": ""}`, want: `:1: empty "prompt"`},
		{name: "message without role", body: `{"messages": [{"content": "x"}]}`, want: `:1: messages[0]: missing role`},
		{name: "no human turn", body: `{"conversations": [{"from": "gpt", "value": "x"}]}`, want: `:1: conversations: no human turn`},
		{name: "two values", body: `{"prompt": "a"} {"prompt": "b"}`, want: `:1: invalid JSON: more than one value on the line`},
		{name: "empty file", body: "\n", want: `: no prompts in dataset`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := testfile.Temp(t, "prompts.jsonl", tc.body)
			_, err := New(config.Probe{API: config.APIChat, Workload: config.Workload{File: path}}, nil)
			if err == nil || err.Error() != path+tc.want {
				t.Fatalf("err = %v, want %q", err, path+tc.want)
			}
		})
	}
}

// TestFileWorkloadRefusesDevices covers a dataset swapped for a symlink to
// /dev/zero after the config was checked: reading it fails at once instead
// of growing memory without bound.
func TestFileWorkloadRefusesDevices(t *testing.T) {
	path := filepath.Join(t.TempDir(), "zero.jsonl")
	if err := os.Symlink("/dev/zero", path); err != nil {
		t.Fatal(err)
	}
	_, err := New(config.Probe{API: config.APIChat, Workload: config.Workload{File: path}}, nil)
	if err == nil || !strings.Contains(err.Error(), "zero.jsonl: not a regular file (a character device)") {
		t.Fatalf("err = %v, want the file refused", err)
	}
}

// TestRandomItemAt: the random workload's item of request seq is the same
// whichever requests are asked and in what order, differs between seqs,
// and does not move the sequence Next hands out.
func TestRandomItemAt(t *testing.T) {
	for _, api := range []string{config.APICompletions, config.APIChat} {
		t.Run(api, func(t *testing.T) {
			newIndexed := func() Source {
				w, err := New(randomProbe(api, 20, 8, 0.5, 3), nil)
				if err != nil {
					t.Fatal(err)
				}
				return w
			}
			ctx := context.Background()
			a, b := newIndexed(), newIndexed()
			forward := map[uint64]Item{}
			for seq := uint64(1); seq <= 6; seq++ {
				forward[seq] = a.ItemAt(ctx, "m", seq)
			}
			for _, seq := range []uint64{5, 2, 6} { // another worker's share, out of order
				if got := b.ItemAt(ctx, "m", seq); !reflect.DeepEqual(got, forward[seq]) {
					t.Errorf("item %d differs when asked out of order: %+v, want %+v", seq, got, forward[seq])
				}
			}
			if reflect.DeepEqual(forward[1], forward[2]) {
				t.Error("items 1 and 2 are the same")
			}
			c := newIndexed()
			want := c.Next(ctx, "m")
			d := newIndexed()
			d.ItemAt(ctx, "m", 4)
			if got := d.Next(ctx, "m"); !reflect.DeepEqual(got, want) {
				t.Error("ItemAt moved the sequence Next hands out")
			}
		})
	}
}

// TestPromptsItemAt: a list of prompts hands request seq the prompt Next
// would hand it in order, (seq-1) modulo the list.
func TestPromptsItemAt(t *testing.T) {
	p := config.Probe{API: config.APICompletions, Workload: config.Workload{Prompts: []config.Prompt{{Prompt: "a"}, {Prompt: "b"}, {Prompt: "c"}}}}
	w, err := New(p, nil)
	if err != nil {
		t.Fatal(err)
	}
	for seq, want := range map[uint64]string{1: "a", 2: "b", 3: "c", 4: "a", 8: "b"} {
		if got := w.ItemAt(context.Background(), "m", seq).Prompt; got != want {
			t.Errorf("seq %d: prompt %v, want %s", seq, got, want)
		}
	}
}

// TestPromptsIndexAndSeed: each item of a prompts list knows its place in
// the list (the key of its output fingerprint) and its own seed.
func TestPromptsIndexAndSeed(t *testing.T) {
	seed := int64(11)
	p := config.Probe{API: config.APIChat, Workload: config.Workload{Prompts: []config.Prompt{
		{Messages: []config.Message{{Role: "user", Content: "a"}}},
		{Messages: []config.Message{{Role: "user", Content: "b"}}, Seed: &seed},
	}}}
	w, err := New(p, nil)
	if err != nil {
		t.Fatal(err)
	}
	for seq := uint64(1); seq <= 4; seq++ {
		it := w.Next(context.Background(), "m")
		wantIndex := int(seq+1) % 2
		if it.Index != wantIndex {
			t.Errorf("request %d: index %d, want %d", seq, it.Index, wantIndex)
		}
		if (it.Seed != nil) != (wantIndex == 1) || it.Seed != nil && *it.Seed != seed {
			t.Errorf("request %d: seed %v, want one only on prompt 1", seq, it.Seed)
		}
	}
}
