package bench

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vllm-prober/vllm-prober/probe"
)

// stepClock advances 10ms on every reading, so the n-th message of a
// stream is stamped 10ms*n after the send.
func stepClock() func() time.Time {
	var n atomic.Int64
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	return func() time.Time { return t0.Add(time.Duration(n.Add(1)-1) * 10 * time.Millisecond) }
}

func sse(events ...string) string {
	var b strings.Builder
	for _, e := range events {
		b.WriteString("data: " + e + "\n\n")
	}
	return b.String()
}

const (
	chatRole   = `{"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}`
	chatA      = `{"model":"m","choices":[{"index":0,"delta":{"content":"a"}}]}`
	chatB      = `{"model":"m","choices":[{"index":0,"delta":{"content":"b"},"finish_reason":"length"}]}`
	cmplA      = `{"model":"m","choices":[{"index":0,"text":"a"}]}`
	cmplB      = `{"model":"m","choices":[{"index":0,"text":"b","finish_reason":"length"}]}`
	usageChunk = `{"model":"m","choices":[],"usage":{"prompt_tokens":7,"completion_tokens":2},"metrics":{"queue_time_ms":1.5,"time_to_first_token_ms":3}}`
)

type clientCase struct {
	name   string
	chat   bool
	status int
	body   string
	want   probe.Result
}

func TestClientTiming(t *testing.T) {
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	tests := []clientCase{
		{name: "chat role chunk is the first token and usage ends latency", chat: true, status: 200,
			body: sse(chatRole, chatA, chatB, usageChunk, "[DONE]"),
			want: probe.Result{Disposition: probe.Accepted, TTFT: ms(10), E2EL: ms(40), TPOT: ms(30),
				ITLs: []time.Duration{ms(10), ms(10)}, OutputTokens: 2, PromptTokens: 7, Chunks: 3, Text: "ab"}},
		{name: "completions latency at the last choice", status: 200,
			body: ": comment\n\n" + sse(cmplA, cmplB, usageChunk, "[DONE]"),
			want: probe.Result{Disposition: probe.Accepted, TTFT: ms(10), E2EL: ms(20), TPOT: ms(10),
				ITLs: []time.Duration{ms(10)}, OutputTokens: 2, PromptTokens: 7, Chunks: 2, Text: "ab"}},
		{name: "http error", status: 503, body: `{"error":{"message":"overloaded"}}`,
			want: probe.Result{Disposition: probe.ServerFailure, Reason: probe.ReasonHTTP5xx}},
		{name: "rate limited", status: 429, body: `{}`,
			want: probe.Result{Disposition: probe.ServerFailure, Reason: probe.ReasonHTTP429}},
		{name: "in-stream error", status: 200, body: sse(cmplA, `{"error":{"message":"boom"}}`, "[DONE]"),
			want: probe.Result{Disposition: probe.ServerFailure, Reason: probe.ReasonStreamError, TTFT: ms(10), E2EL: ms(10), OutputTokens: 1, Chunks: 1, Text: "a"}},
		{name: "no done", status: 200, body: sse(cmplA, cmplB, usageChunk),
			want: probe.Result{Disposition: probe.ServerFailure, Reason: probe.ReasonNoDone, TTFT: ms(10), E2EL: ms(20), TPOT: ms(10),
				ITLs: []time.Duration{ms(10)}, OutputTokens: 2, PromptTokens: 7, Chunks: 2, Text: "ab"}},
		{name: "malformed", status: 200, body: sse(cmplA, `{"choices":[`, "[DONE]"),
			want: probe.Result{Disposition: probe.ServerFailure, Reason: probe.ReasonProtocol, TTFT: ms(10), E2EL: ms(10), OutputTokens: 1, Chunks: 1, Text: "a"}},
		{name: "no choices at all", status: 200, body: sse(usageChunk, "[DONE]"),
			want: probe.Result{Disposition: probe.ServerFailure, Reason: probe.ReasonProtocol, OutputTokens: 2, PromptTokens: 7}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { runClientCase(t, tt) })
	}
}

func runClientCase(t *testing.T, tt clientCase) {
	var gotBody map[string]any
	var gotID string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(b, &gotBody)
		gotID = r.Header.Get("X-Request-Id")
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(tt.status)
		_, _ = io.WriteString(w, tt.body)
	}))
	defer srv.Close()
	c, err := NewClient(ClientOptions{URL: srv.URL, Chat: tt.chat, Model: "m", IgnoreEOS: true, RequestIDPrefix: "bench-x-",
		Prompts: []Prompt{{Text: "hi", OutputLen: 2}}, Now: stepClock(), Probe: benchProbe(&Options{})})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	res := &probe.Result{Seq: 5}
	c.Do(context.Background(), res)
	w := tt.want
	if res.Disposition != w.Disposition || res.Reason != w.Reason {
		t.Fatalf("disposition %s/%s (%s), want %s/%s", res.Disposition, res.Reason, res.Error, w.Disposition, w.Reason)
	}
	if res.TTFT != w.TTFT || res.E2EL != w.E2EL || res.TPOT != w.TPOT || !slices.Equal(res.ITLs, w.ITLs) {
		t.Errorf("timing ttft=%v e2el=%v tpot=%v itls=%v, want %v %v %v %v", res.TTFT, res.E2EL, res.TPOT, res.ITLs, w.TTFT, w.E2EL, w.TPOT, w.ITLs)
	}
	if res.OutputTokens != w.OutputTokens || res.PromptTokens != w.PromptTokens || res.Chunks != w.Chunks || res.Text != w.Text {
		t.Errorf("tokens out=%d in=%d chunks=%d text=%q, want %d %d %d %q", res.OutputTokens, res.PromptTokens, res.Chunks, res.Text,
			w.OutputTokens, w.PromptTokens, w.Chunks, w.Text)
	}
	if w.PromptTokens > 0 && (res.Server == nil || res.Server.QueueTime != 1500*time.Microsecond || res.Server.TTFT != 3*time.Millisecond) {
		t.Errorf("server timing %+v, want the usage chunk's metrics object", res.Server)
	}
	if gotID != "bench-x-4" || res.RequestID != gotID {
		t.Errorf("X-Request-Id %q (result %q), want bench-x-4 as vLLM numbers from 0", gotID, res.RequestID)
	}
	if gotBody["stream"] != true || gotBody["ignore_eos"] != true || gotBody["model"] != "m" {
		t.Errorf("request body %v lacks vLLM's fields", gotBody)
	}
	maxKey := "max_tokens"
	if tt.chat {
		maxKey = "max_completion_tokens"
	}
	if gotBody[maxKey] != 2.0 {
		t.Errorf("body %s = %v, want 2", maxKey, gotBody[maxKey])
	}
}

func TestClientTransportFailures(t *testing.T) {
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
			c, err := NewClient(ClientOptions{URL: tt.url, Model: "m", Timeout: tt.timeout, Prompts: []Prompt{{Text: "x", OutputLen: 1}}})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			res := &probe.Result{Seq: 1}
			c.Do(context.Background(), res)
			if res.Disposition != tt.want || res.Reason != tt.reason || res.Error == "" {
				t.Errorf("got %s/%s %q, want %s/%s with an error", res.Disposition, res.Reason, res.Error, tt.want, tt.reason)
			}
		})
	}
}
