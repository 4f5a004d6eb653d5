package client

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/vllm-prober/vllm-prober/config"
	"github.com/vllm-prober/vllm-prober/internal/testclock"
	"github.com/vllm-prober/vllm-prober/probe"
	"github.com/vllm-prober/vllm-prober/probe/workload"
)

// Events of the vllm bench serve timing cases.
const (
	vbChatRole = `{"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}`
	vbChatA    = `{"model":"m","choices":[{"index":0,"delta":{"content":"a"}}]}`
	vbChatB    = `{"model":"m","choices":[{"index":0,"delta":{"content":"b"},"finish_reason":"length"}]}`
	vbCmplA    = `{"model":"m","choices":[{"index":0,"text":"a"}]}`
	vbCmplB    = `{"model":"m","choices":[{"index":0,"text":"b","finish_reason":"length"}]}`
	vbUsage    = `{"model":"m","choices":[],"usage":{"prompt_tokens":7,"completion_tokens":2},"metrics":{"queue_time_ms":1.5,"time_to_first_token_ms":3}}`
)

// recordingTransport keeps the request and answers with a scripted stream
// (status 0 = 200).
type recordingTransport struct {
	inner  *scriptedTransport
	status int
	body   map[string]any
	header http.Header
}

func (t *recordingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	b, err := io.ReadAll(req.Body)
	if err != nil {
		return nil, err
	}
	_ = json.Unmarshal(b, &t.body)
	t.header = req.Header.Clone()
	req.Body = io.NopCloser(bytes.NewReader(b))
	resp, err := t.inner.RoundTrip(req)
	if err == nil && t.status != 0 {
		resp.StatusCode = t.status
	}
	return resp, err
}

// everyTenMS scripts one event per piece, 10ms apart from 10ms on.
func everyTenMS(events ...string) []scriptedPiece {
	out := make([]scriptedPiece, len(events))
	for i, e := range events {
		out[i] = scriptedPiece{ms: 10 * (i + 1), data: "data: " + e + "\n\n"}
	}
	return out
}

type vllmCase struct {
	name   string
	chat   bool
	status int
	events []string
	want   probe.Result
}

// TestVLLMBenchTiming pins vllm bench serve's definitions (TimingVLLMBench).
func TestVLLMBenchTiming(t *testing.T) {
	tests := []vllmCase{
		{name: "chat role chunk is the first token and the usage chunk does not end latency", chat: true,
			events: []string{vbChatRole, vbChatA, vbChatB, vbUsage, "[DONE]"},
			want: probe.Result{Disposition: probe.Accepted, TTFT: ms(10), E2EL: ms(30), TPOT: ms(20),
				ITLs: []time.Duration{ms(10), ms(10)}, OutputTokens: 2, PromptTokens: 7, Chunks: 3, Text: "ab"}},
		// Without usage the output tokens are counted from the events that
		// carry one: the role chunk opens the stream (TTFT, ITL) but carries
		// none, so TPOT divides by the 2 tokens received, not 3 events.
		{name: "chat without usage: the role chunk carries no token", chat: true,
			events: []string{vbChatRole, vbChatA, vbChatB, "[DONE]"},
			want: probe.Result{Disposition: probe.Accepted, TTFT: ms(10), E2EL: ms(30), TPOT: ms(20),
				ITLs: []time.Duration{ms(10), ms(10)}, OutputTokens: 2, Chunks: 3, Text: "ab"}},
		{name: "completions latency at the last choice",
			events: []string{vbCmplA, vbCmplB, vbUsage, "[DONE]"},
			want: probe.Result{Disposition: probe.Accepted, TTFT: ms(10), E2EL: ms(20), TPOT: ms(10),
				ITLs: []time.Duration{ms(10)}, OutputTokens: 2, PromptTokens: 7, Chunks: 2, Text: "ab"}},
		{name: "http error", status: 503, events: []string{`{"error":{"message":"overloaded"}}`},
			want: probe.Result{Disposition: probe.ServerFailure, Reason: probe.ReasonHTTP5xx}},
		{name: "rate limited", status: 429, events: []string{`{}`},
			want: probe.Result{Disposition: probe.ServerFailure, Reason: probe.ReasonHTTP429}},
		{name: "in-stream error", events: []string{vbCmplA, `{"error":{"message":"boom"}}`, "[DONE]"},
			want: probe.Result{Disposition: probe.ServerFailure, Reason: probe.ReasonStreamError, TTFT: ms(10), E2EL: ms(10), OutputTokens: 1, Chunks: 1, Text: "a"}},
		{name: "no done", events: []string{vbCmplA, vbCmplB, vbUsage},
			want: probe.Result{Disposition: probe.ServerFailure, Reason: probe.ReasonNoDone, TTFT: ms(10), E2EL: ms(20), TPOT: ms(10),
				ITLs: []time.Duration{ms(10)}, OutputTokens: 2, PromptTokens: 7, Chunks: 2, Text: "ab"}},
		{name: "malformed", events: []string{vbCmplA, `{"choices":[`, "[DONE]"},
			want: probe.Result{Disposition: probe.ServerFailure, Reason: probe.ReasonProtocol, TTFT: ms(10), E2EL: ms(10), OutputTokens: 1, Chunks: 1, Text: "a"}},
		{name: "no choices at all", events: []string{vbUsage, "[DONE]"},
			want: probe.Result{Disposition: probe.ServerFailure, Reason: probe.ReasonProtocol, OutputTokens: 2, PromptTokens: 7}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { runVLLMCase(t, tt) })
	}
}

func runVLLMCase(t *testing.T, tt vllmCase) {
	clock := testclock.New(time.Unix(9000, 0))
	tr := &recordingTransport{status: tt.status,
		inner: &scriptedTransport{clock: clock, t0: clock.Now(), pieces: everyTenMS(tt.events...)}}
	api := config.APICompletions
	if tt.chat {
		api = config.APIChat
	}
	p := rqProbe(api)
	p.Request.IgnoreEOS = true
	item := workload.ItemFor(p, "hi", nil)
	item.MaxTokens = 2
	r := scriptedRequester(t, tr, p, Options{Now: clock.Now,
		Timing: TimingVLLMBench, Items: []workload.Item{item}})
	res := &probe.Result{Seq: 5, RequestID: "bench-x-4"}
	r.Do(context.Background(), res)
	w := tt.want
	if res.Disposition != w.Disposition || res.Reason != w.Reason {
		t.Fatalf("disposition %s/%s (%s), want %s/%s", res.Disposition, res.Reason, res.Error, w.Disposition, w.Reason)
	}
	got := fmt.Sprint(res.TTFT, res.E2EL, res.TPOT, res.ITLs, res.OutputTokens, res.PromptTokens, res.Chunks, res.Text)
	want := fmt.Sprint(w.TTFT, w.E2EL, w.TPOT, w.ITLs, w.OutputTokens, w.PromptTokens, w.Chunks, w.Text)
	if got != want {
		t.Errorf("ttft e2el tpot itls out in chunks text = %s, want %s", got, want)
	}
	if w.PromptTokens > 0 && (res.Server == nil || res.Server.QueueTime != 1500*time.Microsecond || res.Server.TTFT != ms(3)) {
		t.Errorf("server timing %+v, want the usage chunk's metrics object", res.Server)
	}
	checkVLLMPayload(t, tr, res, tt.chat)
}

// checkVLLMPayload checks the request is vllm bench serve's.
func checkVLLMPayload(t *testing.T, tr *recordingTransport, res *probe.Result, chat bool) {
	t.Helper()
	if id := tr.header.Get("X-Request-Id"); id != "bench-x-4" || res.RequestID != id {
		t.Errorf("X-Request-Id %q (result %q), want the caller's bench-x-4", id, res.RequestID)
	}
	b := tr.body
	opts := fmt.Sprint(b["stream_options"])
	if b["stream"] != true || b["ignore_eos"] != true || b["model"] != "m" || opts != "map[include_usage:true]" {
		t.Errorf("request body %v lacks vLLM's fields (stream_options %s)", b, opts)
	}
	if _, ok := b["temperature"]; ok {
		t.Errorf("body %v sets temperature; vLLM's client does not", b)
	}
	maxKey, shape := "max_tokens", fmt.Sprint(b["prompt"])
	wantShape := "hi"
	if chat {
		maxKey, shape = "max_completion_tokens", fmt.Sprint(b["messages"])
		wantShape = "[map[content:[map[text:hi type:text]] role:user]]"
	} else if b["repetition_penalty"] != 1.0 {
		t.Errorf("repetition_penalty = %v, want 1.0", b["repetition_penalty"])
	}
	if b[maxKey] != 2.0 || shape != wantShape {
		t.Errorf("body %s = %v, prompt %s; want 2 and %s", maxKey, b[maxKey], shape, wantShape)
	}
}

// TestRequesterItems checks that request Seq n sends Items[n-1] and
// that the probe mode keeps its own payload.
func TestRequesterItems(t *testing.T) {
	clock := testclock.New(time.Unix(9000, 0))
	tr := &recordingTransport{inner: &scriptedTransport{clock: clock, t0: clock.Now()}}
	r := scriptedRequester(t, tr, rqProbe(config.APICompletions), Options{
		Now: clock.Now, Endpoint: "/proxy/v1/completions", Items: []workload.Item{{Prompt: "a", MaxTokens: 16}, {Prompt: "b", MaxTokens: 3}}})
	tests := []struct {
		seq       uint64
		prompt    string
		maxTokens float64
	}{{1, "a", 16}, {2, "b", 3}, {3, "a", 16}}
	for _, tc := range tests {
		t.Run(fmt.Sprint("seq ", tc.seq), func(t *testing.T) {
			tr.inner.pieces = everyTenMS(vbCmplA, "[DONE]")
			r.Do(context.Background(), &probe.Result{Seq: tc.seq})
			b := tr.body
			if b["prompt"] != tc.prompt || b["max_tokens"] != tc.maxTokens {
				t.Errorf("prompt %v max_tokens %v, want %s %v", b["prompt"], b["max_tokens"], tc.prompt, tc.maxTokens)
			}
			if fmt.Sprint(b["stream_options"]) != "map[continuous_usage_stats:true include_usage:true]" || b["temperature"] != 0.0 {
				t.Errorf("probe mode body %v lost its stream_options or temperature", b)
			}
		})
	}
	if u := r.url; u != "http://127.0.0.1:1/proxy/v1/completions" {
		t.Errorf("url %s, want the endpoint under the target URL", u)
	}
}

// TestRequesterByIndex checks that with ByIndex request Seq n sends the
// random workload's item n whatever was sent before it (two workers of one
// schedule send what one process would).
func TestRequesterByIndex(t *testing.T) {
	p := rqProbe(config.APICompletions)
	p.Workload = config.Workload{Random: &config.RandomWorkload{InputTokens: 16, OutputTokens: 4, RangeRatio: 0.5, Seed: 7}}
	p.Request.MaxTokens = 0
	send := func(seqs ...uint64) map[uint64]string {
		clock := testclock.New(time.Unix(9000, 0))
		tr := &recordingTransport{inner: &scriptedTransport{clock: clock, t0: clock.Now()}}
		r := scriptedRequester(t, tr, p, Options{Now: clock.Now, ByIndex: true})
		bodies := map[uint64]string{}
		for _, seq := range seqs {
			tr.inner.pieces = everyTenMS(vbCmplA, "[DONE]")
			r.Do(context.Background(), &probe.Result{Seq: seq})
			bodies[seq] = fmt.Sprint(tr.body["prompt"], tr.body["max_tokens"])
		}
		return bodies
	}
	one := send(1, 2, 3, 4)
	shard := send(4, 2)
	for _, seq := range []uint64{2, 4} {
		if shard[seq] != one[seq] {
			t.Errorf("seq %d sent %s, one process sent %s", seq, shard[seq], one[seq])
		}
	}
	if one[1] == one[2] {
		t.Error("requests 1 and 2 sent the same prompt")
	}
}
