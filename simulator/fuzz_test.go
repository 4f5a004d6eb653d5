package simulator

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/vllm-prober/vllm-prober/simulator/wire"
)

// FuzzGenerate feeds arbitrary bodies to both generation endpoints: the
// simulator must answer every one with a vLLM-shaped response and never
// panic.
func FuzzGenerate(f *testing.F) {
	for _, seed := range []string{
		`{"prompt":"What is 12*12?","max_tokens":3}`,
		`{"prompt":[1,2,3],"stream":true,"stream_options":{"include_usage":true,"continuous_usage_stats":true}}`,
		`{"prompt":[[1],[2,3]],"max_tokens":2,"stream":true}`,
		`{"messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}],"max_completion_tokens":2,"stream":true}`,
		`{"messages":[{"role":"user","content":null}],"min_tokens":1,"max_tokens":2}`,
		`{"prompt":"x","max_tokens":-1}`, `{"prompt":"x","n":0}`, `{"messages":"hi"}`, `null`, `[]`, `{`, ``,
		"{\"prompt\":\"\\ud800\",\"max_tokens\":1}",
	} {
		f.Add(seed, false)
		f.Add(seed, true)
	}
	o := fastOptions()
	o.PrefillBase, o.DecodeBase, o.Trace = 0, 0, false
	o.MaxModelLen = 64
	s, err := New(o)
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { s.Close() })
	h := s.Handler()
	f.Fuzz(func(t *testing.T, body string, chat bool) {
		path := "/v1/completions"
		if chat {
			path = "/v1/chat/completions"
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, path, strings.NewReader(body)))
		out := rec.Body.Bytes()
		switch {
		case rec.Code == http.StatusOK && strings.HasPrefix(rec.Header().Get("Content-Type"), "text/event-stream"):
			if !bytes.HasSuffix(out, []byte("data: [DONE]\n\n")) {
				t.Fatalf("stream without [DONE]: %q", out)
			}
			for _, ev := range strings.Split(strings.TrimSuffix(string(out), "\n\n"), "\n\n") {
				data, ok := strings.CutPrefix(ev, "data: ")
				if !ok || (data != "[DONE]" && !json.Valid([]byte(data))) {
					t.Fatalf("bad event %q", ev)
				}
			}
		case rec.Code == http.StatusOK:
			if !json.Valid(out) {
				t.Fatalf("invalid JSON body %q", out)
			}
		case rec.Code == http.StatusBadRequest || rec.Code == http.StatusNotFound:
			var e wire.ErrorBody
			if err := json.Unmarshal(out, &e); err != nil || e.Error.Code != rec.Code || e.Error.Message == "" {
				t.Fatalf("status %d with body %q", rec.Code, out)
			}
		default:
			t.Fatalf("unexpected status %d: %q", rec.Code, out)
		}
	})
}
