package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vllm-prober/vllm-prober/bench/dataset"
	"github.com/vllm-prober/vllm-prober/probe"
)

// seen is what a test server received.
type seen struct {
	mu     sync.Mutex
	path   string
	header http.Header
	body   map[string]any
}

// sseServer answers every request with a two-token stream and records it.
func sseServer(t *testing.T, s *seen) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		s.path, s.header = r.URL.Path, r.Header.Clone()
		s.body = nil
		_ = json.Unmarshal(b, &s.body)
		s.mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		for _, e := range []string{`{"model":"m","choices":[{"index":0,"text":"a","delta":{"content":"a"}}]}`,
			`{"model":"m","choices":[{"index":0,"text":"b","delta":{"content":"b"},"finish_reason":"length"}]}`,
			`{"model":"m","choices":[],"usage":{"prompt_tokens":3,"completion_tokens":2}}`, "[DONE]"} {
			fmt.Fprintf(w, "data: %s\n\n", e)
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestBenchRequester checks that bench sends through the probe package's
// Requester with vllm bench serve's payload, endpoint, id and token.
func TestBenchRequester(t *testing.T) {
	var s seen
	url := sseServer(t, &s)
	idPattern := regexp.MustCompile(`^bench-[0-9a-f]{8}-4$`)
	tests := []struct {
		name     string
		backend  string
		endpoint string
		prompts  []dataset.Prompt
		check    func(t *testing.T, b map[string]any)
	}{
		{name: "random completions as token ids", backend: backendOpenAI, endpoint: "/v1/completions",
			check: func(t *testing.T, b map[string]any) {
				ids, _ := b["prompt"].([]any)
				if len(ids) != 16 || b["max_tokens"] != 4.0 || b["repetition_penalty"] != 1.0 || b["ignore_eos"] != true {
					t.Errorf("body %v: want 16 token ids, max_tokens 4, repetition_penalty 1, ignore_eos", b)
				}
			}},
		{name: "random chat prompt as a content part", backend: backendOpenAIChat, endpoint: "/v1/chat/completions",
			check: func(t *testing.T, b map[string]any) {
				got := fmt.Sprint(b["messages"])
				if !strings.HasPrefix(got, "[map[content:[map[text:") || !strings.HasSuffix(got, " type:text]] role:user]]") {
					t.Errorf("messages %s, want one user message with one text content part", got)
				}
			}},
		{name: "dataset chat prompt as a content part", backend: backendOpenAIChat, endpoint: "/v1/chat/completions",
			prompts: []dataset.Prompt{{Text: "x", MaxTokens: 9}, {Text: "y", MaxTokens: 5}, {Text: "z", MaxTokens: 7}},
			check: func(t *testing.T, b map[string]any) {
				want := "[map[content:[map[text:y type:text]] role:user]]"
				if got := fmt.Sprint(b["messages"]); got != want || b["max_completion_tokens"] != 5.0 {
					t.Errorf("messages %s max_completion_tokens %v, want %s and 5 (request 5 sends prompt 2 of 3)", got, b["max_completion_tokens"], want)
				}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := benchTestOptions(url)
			o.Backend, o.Endpoint, o.Model, o.APIKey, o.IgnoreEOS = tt.backend, tt.endpoint, "m", "sk-test", true
			if tt.prompts != nil {
				o.DatasetName = datasetCustom
			}
			r, err := newRequester(&o, tt.prompts, Env{})
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			res := &probe.Result{Seq: 5}
			r.Do(context.Background(), res)
			if res.Disposition != probe.Accepted || res.TTFT <= 0 || res.OutputTokens != 2 {
				t.Fatalf("result %s/%s %q ttft %v out %d, want accepted with 2 tokens", res.Disposition, res.Reason, res.Error, res.TTFT, res.OutputTokens)
			}
			s.mu.Lock()
			defer s.mu.Unlock()
			if s.path != tt.endpoint || s.header.Get("Authorization") != "Bearer sk-test" || !idPattern.MatchString(s.header.Get("X-Request-Id")) {
				t.Errorf("path %s auth %q id %q, want %s, the bearer token and bench-<8 hex>-4", s.path,
					s.header.Get("Authorization"), s.header.Get("X-Request-Id"), tt.endpoint)
			}
			if fmt.Sprint(s.body["stream_options"]) != "map[include_usage:true]" || s.body["model"] != "m" {
				t.Errorf("body %v: want vLLM's stream_options and the model", s.body)
			}
			tt.check(t, s.body)
			s.mu.Unlock()
			r.Do(context.Background(), &probe.Result{Seq: 5, RequestID: "ready-test"})
			s.mu.Lock()
			if id := s.header.Get("X-Request-Id"); id != "ready-test" {
				t.Errorf("X-Request-Id %q, want the caller's ready-test kept", id)
			}
		})
	}
}

func TestBenchRequesterFailures(t *testing.T) {
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body) // so the server notices the client leaving
		select {
		case <-r.Context().Done():
		case <-time.After(5 * time.Second):
		}
	}))
	defer slow.Close()
	down := httptest.NewServer(http.NotFoundHandler())
	downURL := down.URL
	down.Close()
	tests := []struct {
		name    string
		url     string
		timeout time.Duration
		want    probe.Disposition
		reason  string
	}{
		{"timeout", slow.URL, 50 * time.Millisecond, probe.ClientTimeout, probe.ReasonTimeout},
		{"connection refused", downURL, time.Second, probe.ServerFailure, probe.ReasonConnect},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := benchTestOptions(tt.url)
			o.Model, o.Timeout = "m", tt.timeout
			r, err := newRequester(&o, nil, Env{})
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			res := &probe.Result{Seq: 1}
			r.Do(context.Background(), res)
			if res.Disposition != tt.want || res.Reason != tt.reason || res.Error == "" {
				t.Errorf("got %s/%s %q, want %s/%s with an error", res.Disposition, res.Reason, res.Error, tt.want, tt.reason)
			}
		})
	}
}

// TestBenchChatLatencyEndsAtLastToken runs bench's chat timing against a
// server that sends its usage chunk 300 ms after the last token: E2EL and
// TPOT end at the last token-carrying event, as vLLM's chat client has it.
func TestBenchChatLatencyEndsAtLastToken(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/models" {
			fmt.Fprint(w, `{"object":"list","data":[{"id":"m","object":"model"}]}`)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		for _, e := range []string{`{"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}`,
			`{"model":"m","choices":[{"index":0,"delta":{"content":"a"}}]}`,
			`{"model":"m","choices":[{"index":0,"delta":{"content":"b"},"finish_reason":"length"}]}`} {
			fmt.Fprintf(w, "data: %s\n\n", e)
		}
		w.(http.Flusher).Flush()
		time.Sleep(300 * time.Millisecond)
		fmt.Fprint(w, "data: {\"model\":\"m\",\"choices\":[],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":2}}\n\ndata: [DONE]\n\n")
	}))
	t.Cleanup(srv.Close)
	o := benchTestOptions(srv.URL)
	o.Backend, o.Endpoint, o.NumPrompts, o.RandomOutputLen = backendOpenAIChat, "/v1/chat/completions", 2, 2
	out, err := Bench(context.Background(), o, Env{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range out.Run.Results {
		if r.Disposition != probe.Accepted || r.OutputTokens != 2 || r.E2EL >= 250*time.Millisecond || r.TPOT >= 250*time.Millisecond {
			t.Errorf("request %d: %s e2el %v tpot %v, want accepted with latency at the last token, before the usage chunk",
				r.Seq, r.Disposition, r.E2EL, r.TPOT)
		}
	}
}
