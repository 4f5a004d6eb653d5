package wire

import "testing"

// TestStreamErrorEvent compares with Python's json.dumps, which vLLM uses
// for in-stream errors: non-ASCII escaped, astral runes as surrogate pairs.
func TestStreamErrorEvent(t *testing.T) {
	param := "max_tokens"
	tests := []struct {
		name string
		info ErrorInfo
		want string
	}{
		{"escapes like json.dumps", ErrorInfo{Message: "é😀\n\"x\\", Type: "T", Code: 500},
			`data: {"error": {"message": "\u00e9\ud83d\ude00\n\"x\\", "type": "T", "param": null, "code": 500}}` + "\n\n"},
		{"param set", ErrorInfo{Message: "m", Type: "BadRequestError", Param: &param, Code: 400},
			`data: {"error": {"message": "m", "type": "BadRequestError", "param": "max_tokens", "code": 400}}` + "\n\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := string(StreamErrorEvent(tc.info)); got != tc.want {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
}

// TestCompact checks pydantic's model_dump_json form: no spaces, no HTML
// escaping, no trailing newline.
func TestCompact(t *testing.T) {
	got := string(Compact(UsageStream{PromptTokens: 1, TotalTokens: 3, CompletionTokens: 2}))
	if want := `{"prompt_tokens":1,"total_tokens":3,"completion_tokens":2}`; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
	if got, want := string(Compact("<a&b>")), `"<a&b>"`; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}
