package naive

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vllm-prober/vllm-prober/probe"
)

// TestRead feeds the naive client's reader a stream with a role-less
// completions answer, a usage chunk, comments and blank lines, on a clock
// that advances 1 ms per line read: token events are the ones whose choice
// carries text, each stamped when its line was read.
func TestRead(t *testing.T) {
	const stream = ": comment\n\n" + // lines 1-2
		`data: {"choices":[{"text":"a"}]}` + "\n\n" + // line 3: first token
		`data: {"choices":[{"text":""}]}` + "\n\n" + // line 5: no text
		`data: {"choices":[{"text":" b"}]}` + "\n\n" + // line 7
		`data: {"choices":[],"usage":{"completion_tokens":2}}` + "\n\n" + // line 9
		"data: [DONE]\n\n"
	tests := []struct {
		name, body string
		want       probe.Result
	}{
		{name: "complete", body: stream, want: probe.Result{Disposition: probe.Accepted, Chunks: 2,
			TTFT: 3 * time.Millisecond, ITLs: []time.Duration{4 * time.Millisecond}}},
		{name: "no done", body: stream[:strings.Index(stream, "data: [DONE]")], want: probe.Result{Disposition: probe.ServerFailure,
			Error: "stream ended without [DONE]", Chunks: 2, TTFT: 3 * time.Millisecond, ITLs: []time.Duration{4 * time.Millisecond}}},
		{name: "bad event", body: "data: {\"choices\":[{\"text\":\"a\"}]}\n\ndata: {oops\n\n",
			want: probe.Result{Disposition: probe.ServerFailure, Error: "event 2: invalid character 'o'", Chunks: 1, TTFT: time.Millisecond}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sent := time.Now()
			clock := sent
			now := func() time.Time { clock = clock.Add(time.Millisecond); return clock }
			res := &probe.Result{Sent: sent}
			Read(strings.NewReader(tc.body), now, res)
			if res.Disposition != tc.want.Disposition || !strings.HasPrefix(res.Error, tc.want.Error) || res.Chunks != tc.want.Chunks ||
				res.TTFT != tc.want.TTFT || !slices.Equal(res.ITLs, tc.want.ITLs) {
				t.Errorf("got %s %q, %d chunks, TTFT %v, ITLs %v; want %s %q, %d, %v, %v", res.Disposition, res.Error, res.Chunks, res.TTFT, res.ITLs,
					tc.want.Disposition, tc.want.Error, tc.want.Chunks, tc.want.TTFT, tc.want.ITLs)
			}
		})
	}
}

// TestRequest checks that the naive client asks for what the daemon
// asks (usage in every event), so the server does the same work for both,
// and bounds its requests as the other clients are bounded.
func TestRequest(t *testing.T) {
	f, err := New("http://127.0.0.1:1/", "m", 4, 16, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(f.body, `"stream_options":{"continuous_usage_stats":true,"include_usage":true}`) || f.client.Timeout != time.Minute ||
		f.url != "http://127.0.0.1:1/v1/completions" {
		t.Errorf("request %s to %s, timeout %v", f.body, f.url, f.client.Timeout)
	}
}
