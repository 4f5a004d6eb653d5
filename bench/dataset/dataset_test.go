package dataset

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vllm-prober/vllm-prober/internal/testfile"
)

func TestLoadDataset(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := testfile.Write(t, dir, name, body)
		return p
	}
	sharegpt := write("sg.json", `[{"conversations":[{"from":"human","value":"hello there"},{"from":"gpt","value":"one two three"}]},
		{"conversations":[{"from":"human","value":"alone"}]}]`)
	zero := filepath.Join(dir, "zero.jsonl")
	if err := os.Symlink("/dev/zero", zero); err != nil {
		t.Fatal(err)
	}
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
				if p.Text != "hello there" || p.MaxTokens != 3 {
					t.Errorf("prompt %+v: want the first turn, output = reply words, the short record skipped", p)
				}
			}
		}},
		{name: "jsonl", path: jsonl, n: 2, check: func(t *testing.T, ps []Prompt) {
			if len(ps) != 2 || (ps[0].Text == "") == (ps[1].Text == "") || ps[0].MaxTokens != 64 {
				t.Errorf("prompts %+v: want one prompt and one messages record, output length 64", ps)
			}
		}},
		{name: "bad line", path: write("bad.jsonl", "{\"prompt\":\"a\"}\n{oops\n"), wantErr: "bad.jsonl:2: invalid JSON"},
		{name: "unknown shape", path: write("shape.jsonl", "{\"text\":\"a\"}\n"), wantErr: `shape.jsonl:1: need one of "prompt", "messages" or "conversations"`},
		{name: "empty prompt", path: write("empty.jsonl", "{\"prompt\":\"\"}\n"), wantErr: `empty.jsonl:1: empty "prompt"`},
		{name: "sharegpt entry without keys", path: write("sgbad.json", `[{"text":"a"}]`), wantErr: "sgbad.json: entry 1: need one of"},
		{name: "message without role", path: write("role.jsonl", `{"messages":[{"content":"x"}]}`), wantErr: "role.jsonl:1: messages[0]: missing role"},
		{name: "nothing usable", path: write("none.json", "[]"), wantErr: "no usable prompts"},
		{name: "missing file", path: filepath.Join(dir, "nope.jsonl"), wantErr: "read dataset"},
		{name: "symlink to /dev/zero", path: zero, wantErr: "zero.jsonl: not a regular file (a character device)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ps, err := Load(tt.path, tt.n, 64, 0)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || len(ps) != tt.n {
				t.Fatalf("Load = %d prompts, %v; want %d", len(ps), err, tt.n)
			}
			tt.check(t, ps)
		})
	}
}
