package bench

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestRandomPrompts(t *testing.T) {
	tests := []struct {
		name         string
		in, out      int
		ratio        float64
		chat         bool
		inLo, inHi   int
		outLo, outHi int
	}{
		{"fixed lengths", 100, 10, 0, false, 100, 100, 10, 10},
		{"range", 100, 10, 0.5, false, 50, 150, 5, 15},
		{"chat words", 20, 4, 0.25, true, 15, 25, 3, 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ps := RandomPrompts(3000, tt.in, tt.out, tt.ratio, 1, tt.chat)
			seenIn := map[int]bool{}
			for _, p := range ps {
				n := len(p.TokenIDs)
				if tt.chat {
					n = len(strings.Fields(p.Text))
				}
				if n != p.PromptLen || n < tt.inLo || n > tt.inHi || p.OutputLen < tt.outLo || p.OutputLen > tt.outHi {
					t.Fatalf("prompt of %d tokens (PromptLen %d), output %d: outside [%d,%d] / [%d,%d]",
						n, p.PromptLen, p.OutputLen, tt.inLo, tt.inHi, tt.outLo, tt.outHi)
				}
				seenIn[n] = true
			}
			if tt.ratio > 0 && (!seenIn[tt.inLo] || !seenIn[tt.inHi]) {
				t.Errorf("range ends %d and %d never drawn in 3000 prompts", tt.inLo, tt.inHi)
			}
			again := RandomPrompts(3000, tt.in, tt.out, tt.ratio, 1, tt.chat)
			if !slices.EqualFunc(ps, again, func(a, b Prompt) bool { return a.Text == b.Text && slices.Equal(a.TokenIDs, b.TokenIDs) }) {
				t.Error("the same seed gave other prompts")
			}
		})
	}
}

func TestLoadDataset(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	sharegpt := write("sg.json", `[{"conversations":[{"from":"human","value":"hello there"},{"from":"gpt","value":"one two three"}]},
		{"conversations":[{"from":"human","value":"alone"}]}]`)
	jsonl := write("d.jsonl", "{\"prompt\":\"a b c\"}\n\n{\"messages\":[{\"role\":\"user\",\"content\":\"x y\"}]}\n")
	tests := []struct {
		name    string
		path    string
		n       int
		wantErr string
		check   func(t *testing.T, ps []Prompt)
	}{
		{name: "sharegpt", path: sharegpt, n: 3, check: func(t *testing.T, ps []Prompt) {
			for _, p := range ps {
				if p.Text != "hello there" || p.OutputLen != 3 || p.PromptLen != 2 {
					t.Errorf("prompt %+v: want the first turn, output = reply words, the short record skipped", p)
				}
			}
		}},
		{name: "jsonl", path: jsonl, n: 2, check: func(t *testing.T, ps []Prompt) {
			if len(ps) != 2 || (ps[0].Text == "") == (ps[1].Text == "") || ps[0].OutputLen != 64 {
				t.Errorf("prompts %+v: want one prompt and one messages record, output length 64", ps)
			}
		}},
		{name: "bad line", path: write("bad.jsonl", "{\"prompt\":\"a\"}\n{oops\n"), wantErr: "bad.jsonl:2: invalid JSON"},
		{name: "unknown shape", path: write("shape.jsonl", "{\"text\":\"a\"}\n"), wantErr: "shape.jsonl:1: want"},
		{name: "empty prompt", path: write("empty.jsonl", "{\"prompt\":\"\"}\n"), wantErr: `empty.jsonl:1: empty "prompt"`},
		{name: "nothing usable", path: write("none.json", "[]"), wantErr: "no usable prompts"},
		{name: "missing file", path: filepath.Join(dir, "nope.jsonl"), wantErr: "read dataset"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ps, err := LoadDataset(tt.path, tt.n, 64, 0)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || len(ps) != tt.n {
				t.Fatalf("LoadDataset = %d prompts, %v; want %d", len(ps), err, tt.n)
			}
			tt.check(t, ps)
		})
	}
}
