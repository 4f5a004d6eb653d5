package client

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/vllm-prober/vllm-prober/config"
	"github.com/vllm-prober/vllm-prober/probe"
	"github.com/vllm-prober/vllm-prober/probe/stream"
	"github.com/vllm-prober/vllm-prober/probe/stream/streamtest"
)

// BenchmarkStreamEvent measures the whole per-event client path: parse the
// SSE event, decode the chunk and apply it to the measurement, as
// readStream does (the measurement is reset every 64 events, a typical
// stream, so its slices stay bounded). "json" decodes with encoding/json
// alone, the baseline of the fast scanner, in the same run.
func BenchmarkStreamEvent(b *testing.B) {
	for _, bc := range []struct {
		name   string
		decode func(c *stream.Chunk, data []byte) error
	}{
		{"scan", (*stream.Chunk).Decode},
		{"json", func(c *stream.Chunk, data []byte) error {
			*c = stream.Chunk{Choices: c.Choices[:0]}
			return json.Unmarshal(data, c)
		}},
	} {
		b.Run(bc.name, func(b *testing.B) { benchmarkStreamEvent(b, bc.decode) })
	}
}

func benchmarkStreamEvent(b *testing.B, decode func(c *stream.Chunk, data []byte) error) {
	src := streamtest.Loop(bytes.Repeat([]byte(streamtest.ChatEvent), 64))
	s := stream.NewReader(src, 0, time.Now)
	var c stream.Chunk
	m := &measurement{}
	usage, n := 0, 0
	b.SetBytes(int64(len(streamtest.ChatEvent)))
	b.ReportAllocs()
	for b.Loop() {
		ev, err := s.Next()
		if err != nil {
			b.Fatal(err)
		}
		if err := decode(&c, ev.Data); err != nil {
			b.Fatal(err)
		}
		// Continuous usage counts up within a stream.
		usage++
		c.Usage.CompletionTokens = usage
		m.observe(&c, ev.At)
		if n++; n == 64 {
			m, usage, n = &measurement{}, 0, 0
		}
	}
}

// BenchmarkRequestBody measures what a request costs before it is sent:
// the next workload item (a random 128-token completions prompt) and the
// JSON body.
func BenchmarkRequestBody(b *testing.B) {
	p := config.Probe{Name: "p", API: config.APICompletions, Request: config.Request{MaxTokens: 64},
		Workload: config.Workload{Random: &config.RandomWorkload{InputTokens: 128, OutputTokens: 64, Seed: 1}}}
	r, err := New(config.Target{Name: "t", URL: "http://127.0.0.1:1", Model: "m"}, p, Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		item := r.work.Next(ctx, "m")
		if _, err := r.requestBody("m", item); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRequestBodyEncode measures the JSON body of a chat request
// alone, for one item drawn before the loop.
func BenchmarkRequestBodyEncode(b *testing.B) {
	p := config.Probe{Name: "p", API: config.APIChat, Request: config.Request{IgnoreEOS: true},
		Workload: config.Workload{Random: &config.RandomWorkload{InputTokens: 128, OutputTokens: 16, Seed: 1}}}
	r, err := New(config.Target{Name: "t", URL: "http://127.0.0.1:1", Model: "m"}, p, Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	item := r.work.Next(context.Background(), "m")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := r.requestBody("m", item); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRequest measures one whole request of the client: prepared,
// sent over a kept-alive loopback connection, its 64 streamed chat events
// read, decoded and measured, and judged. The server writes prepared bytes,
// but its own allocations (net/http reading the request) count in B/op and
// allocs/op too, the same before and after a change of the client.
func BenchmarkRequest(b *testing.B) {
	var events [][]byte
	for i := range 64 {
		fin := "null"
		if i == 63 {
			fin = `"length"`
		}
		events = append(events, fmt.Appendf(nil, `data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1786304610,"model":"m","choices":[{"index":0,"delta":{"content":"tok"},"logprobs":null,"finish_reason":%s,"token_ids":null}],"usage":{"prompt_tokens":26,"total_tokens":%d,"completion_tokens":%d}}`+"\n\n", fin, 27+i, i+1))
	}
	done := []byte("data: [DONE]\n\n")
	url := serve(b, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
		w.WriteHeader(http.StatusOK)
		for _, e := range events {
			_, _ = w.Write(e)
			w.(http.Flusher).Flush()
		}
		_, _ = w.Write(done)
	}))
	p := rqProbe("chat")
	p.Request.MaxTokens = 64
	r, err := New(rqTarget(url), p, Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	b.ReportAllocs()
	var seq uint64
	for b.Loop() {
		seq++
		res := doRequest(context.Background(), r, seq)
		if res.Disposition != probe.Accepted {
			b.Fatal(res.Disposition, res.Error, res.Reason)
		}
	}
}
