package simulator

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/vllm-prober/vllm-prober/simulator/wire"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

const chatQuestion = `"messages":[{"role":"user","content":"What is 12*12? Digits only."}]`

// TestGoldenStreams compares responses event by event with golden files
// whose shapes were checked against testdata/vllm-sse-sample.txt.
func TestGoldenStreams(t *testing.T) {
	cases := []struct {
		name, path, body string
	}{
		{"chat_stream", "/v1/chat/completions", `{"model":"sim-llama",` + chatQuestion + `,"stream":true}`},
		{"chat_stream_usage", "/v1/chat/completions", `{` + chatQuestion + `,"stream":true,"stream_options":{"include_usage":true}}`},
		{"chat_stream_continuous", "/v1/chat/completions", `{` + chatQuestion + `,"stream":true,"stream_options":{"include_usage":true,"continuous_usage_stats":true}}`},
		{"chat_stream_length", "/v1/chat/completions", `{"messages":[{"role":"user","content":[{"type":"text","text":"Tell me a story"}]}],"max_completion_tokens":2,"stream":true}`},
		{"chat", "/v1/chat/completions", `{` + chatQuestion + `}`},
		{"completions_stream", "/v1/completions", `{"model":"sim-llama","prompt":"Say something","max_tokens":3,"stream":true}`},
		{"completions_stream_usage", "/v1/completions", `{"prompt":"Say something","max_tokens":3,"stream":true,"stream_options":{"include_usage":true}}`},
		{"completions_stream_continuous", "/v1/completions", `{"prompt":[1,2,3,4,5],"max_tokens":3,"stream":true,"stream_options":{"include_usage":true,"continuous_usage_stats":true}}`},
		{"completions_stream_two_prompts", "/v1/completions", `{"prompt":["What is 2+3?","What is 7*6?"],"stream":true,"stream_options":{"include_usage":true}}`},
		{"completions", "/v1/completions", `{"prompt":"What is 12*12?","max_tokens":8}`},
		{"completions_ignore_eos", "/v1/completions", `{"prompt":"What is 12*12?","max_tokens":4,"ignore_eos":true}`},
		{"error_bad_json", "/v1/completions", `{"prompt":`},
		{"error_wrong_model", "/v1/chat/completions", `{"model":"gpt-4",` + chatQuestion + `,"stream":true}`},
		{"error_max_tokens", "/v1/completions", `{"prompt":"hi","max_tokens":99999,"stream":true}`},
		{"error_context", "/v1/completions", `{"prompt":"hi","max_tokens":8192}`},
		{"error_stream_options", "/v1/completions", `{"prompt":"hi","stream_options":{"include_usage":true}}`},
		{"error_wrong_type", "/v1/completions", `{"prompt":"hi","max_tokens":"many"}`},
	}
	_, url := startTest(t, fastOptions())
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			compareGolden(t, tc.name, goldenText(t, url+tc.path, tc.body))
		})
	}
}

func normaliseAll(evs []string) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = normalise(e)
	}
	return out
}

// goldenText posts body to url and returns the answer as the golden files
// hold it: status, content type and the normalised body or events.
func goldenText(t *testing.T, url, body string) string {
	t.Helper()
	resp, b := post(t, url, body)
	got := resp.Status + "\n" + resp.Header.Get("Content-Type") + "\n"
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		return got + strings.Join(normaliseAll(events(t, b)), "\n") + "\n"
	}
	return got + normalise(string(b)) + "\n"
}

func compareGolden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", "golden", name+".txt")
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Errorf("%s differs from %s\n got:\n%s\nwant:\n%s", name, path, got, want)
	}
}

// sampleEvents returns the JSON data lines of the reference sample that
// parse, in file order: (1a) chat x4, (1b) the continuous-usage role
// chunk, (1c) completions x2, (2a) completions x3, (2b) the error event.
func sampleEvents(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "vllm-sse-sample.txt"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok || !json.Valid([]byte(data)) {
			continue
		}
		out = append(out, data)
	}
	if len(out) != 11 {
		t.Fatalf("reference sample: want 11 parseable events, got %d", len(out))
	}
	return out
}

// TestKeyOrderMatchesReference checks every chunk kind against the real
// captures key by key, in order.
func TestKeyOrderMatchesReference(t *testing.T) {
	ref := sampleEvents(t)
	o := fastOptions()
	o.PerRequestMetrics = false // the captures come from servers without it
	_, url := startTest(t, o)
	_, chatBody := post(t, url+"/v1/chat/completions", `{`+chatQuestion+`,"stream":true,"stream_options":{"include_usage":true}}`)
	chat := events(t, chatBody)
	_, cmplBody := post(t, url+"/v1/completions", `{"prompt":"Say something","max_tokens":2,"stream":true,"stream_options":{"include_usage":true}}`)
	cmpl := events(t, cmplBody)
	_, contBody := post(t, url+"/v1/chat/completions", `{`+chatQuestion+`,"stream":true,"stream_options":{"include_usage":true,"continuous_usage_stats":true}}`)
	cont := events(t, contBody)
	cases := []struct {
		name      string
		got, want string
	}{
		{"chat role chunk", chat[0], ref[0]},
		{"chat content chunk", chat[1], ref[1]},
		{"chat finish chunk", chat[len(chat)-3], ref[2]},
		{"chat usage chunk", chat[len(chat)-2], ref[3]},
		{"chat role chunk with continuous usage", cont[0], ref[4]},
		{"completions content chunk", cmpl[0], ref[7]},
		{"completions finish chunk", cmpl[1], ref[8]},
		{"completions usage chunk", cmpl[2], ref[9]},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got, want := keyOrder(t, tc.got), keyOrder(t, tc.want); !slices.Equal(got, want) {
				t.Errorf("keys differ\n got: %v\nwant: %v\n(event %s)", got, want, tc.got)
			}
		})
	}
	t.Run("done", func(t *testing.T) {
		if chat[len(chat)-1] != "[DONE]" || cmpl[len(cmpl)-1] != "[DONE]" {
			t.Errorf("streams must end with [DONE]: %q / %q", chat[len(chat)-1], cmpl[len(cmpl)-1])
		}
	})
}

// TestStreamErrorEventMatchesReference checks the json.dumps rendering.
func TestStreamErrorEventMatchesReference(t *testing.T) {
	ref := sampleEvents(t)[10]
	got := strings.TrimSuffix(strings.TrimPrefix(string(wire.StreamErrorEvent(internalError().info)), "data: "), "\n\n")
	if got != ref {
		t.Errorf("error event\n got: %s\nwant: %s", got, ref)
	}
}

// TestGoldenErrors pins an error during streaming and the 401 body.
func TestGoldenErrors(t *testing.T) {
	cases := []struct {
		name string
		mod  func(*Options)
		path string
		body string
	}{
		{"error_during_stream_chat", func(o *Options) { o.Faults.ErrorEvent = 1 }, "/v1/chat/completions",
			`{"messages":[{"role":"user","content":"Count to ten"}],"max_tokens":4,"ignore_eos":true,"stream":true,"stream_options":{"include_usage":true}}`},
		{"error_during_stream_completions", func(o *Options) { o.Faults.ErrorEvent = 1 }, "/v1/completions",
			`{"prompt":"Count to ten","max_tokens":4,"ignore_eos":true,"stream":true}`},
		{"error_unauthorized", func(o *Options) { o.APIKey = "key" }, "/v1/completions", `{"prompt":"hi","stream":true}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o := fastOptions()
			tc.mod(&o)
			_, url := startTest(t, o)
			compareGolden(t, tc.name, goldenText(t, url+tc.path, tc.body))
		})
	}
}
