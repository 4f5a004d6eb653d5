package client

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/common/model"

	"github.com/vllm-prober/vllm-prober/config"
	"github.com/vllm-prober/vllm-prober/probe"
)

// scriptClock is set by the scripted transport as bytes "arrive".
type scriptClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *scriptClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *scriptClock) set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
}

// scriptedPiece is a run of body bytes that arrives at ms after t0.
type scriptedPiece struct {
	ms   int
	data string
}

// scriptedTransport answers with a stream whose bytes arrive at scripted
// times of the fake clock, so the whole request path can be checked exactly.
type scriptedTransport struct {
	clock     *scriptClock
	t0        time.Time
	headersMS int
	pieces    []scriptedPiece
}

func (s *scriptedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	_, _ = io.Copy(io.Discard, req.Body)
	s.clock.set(s.t0.Add(time.Duration(s.headersMS) * time.Millisecond))
	h := http.Header{}
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	return &http.Response{StatusCode: 200, Header: h, Body: &scriptedBody{s: s}, Request: req}, nil
}

type scriptedBody struct {
	s *scriptedTransport
	i int
}

func (b *scriptedBody) Read(p []byte) (int, error) {
	if b.i >= len(b.s.pieces) {
		return 0, io.EOF
	}
	pc := b.s.pieces[b.i]
	b.i++
	b.s.clock.set(b.s.t0.Add(time.Duration(pc.ms) * time.Millisecond))
	return copy(p, pc.data), nil
}

func (b *scriptedBody) Close() error { return nil }

func sse(events ...string) string {
	var sb strings.Builder
	for _, e := range events {
		sb.WriteString("data: " + e + "\n\n")
	}
	return sb.String()
}

// TestRequesterExactTiming runs a whole request through the requester with
// an injected clock: TTFT, ITL, TPOT, E2EL and the phases must come out
// exactly as defined.
func TestRequesterExactTiming(t *testing.T) {
	clock := &scriptClock{t: time.Unix(7000, 0)}
	second := sse(chatOK[2])
	tr := &scriptedTransport{clock: clock, t0: clock.now(), headersMS: 20, pieces: []scriptedPiece{
		{ms: 300, data: sse(chatOK[0])},               // role chunk: not a token
		{ms: 310, data: sse(chatOK[1]) + second[:20]}, // first token; the next event split
		{ms: 350, data: second[20:]},
		{ms: 360, data: sse(chatOK[3]) + "data: [DONE]\n\n"},
	}}
	p := rqProbe(config.APIChat)
	p.SLO = config.SLO{TTFT: model.Duration(300 * time.Millisecond)}
	r := newTestRequester(t, rqTarget("http://127.0.0.1:1"), p, Options{Now: clock.now})
	r.client.Transport = tr
	res := &probe.Result{Seq: 1, Scheduled: clock.now().Add(-5 * time.Millisecond)}
	r.Do(context.Background(), res)

	checks := []struct {
		name      string
		got, want any
	}{
		{"disposition", res.Disposition, probe.LatencyFailure},
		{"slo", fmt.Sprint(res.SLOViolations), fmt.Sprint([]string{probe.SLOTTFT})},
		{"sent", res.Sent, tr.t0},
		{"lag", res.Lag, ms(5)},
		{"ttft", res.TTFT, ms(310)},
		{"e2el", res.E2EL, ms(350)},
		{"tpot", res.TPOT, ms(40)},
		{"itls", fmt.Sprint(res.ITLs), fmt.Sprint([]time.Duration{ms(40)})},
		{"itl tokens", fmt.Sprint(res.ITLTokens), fmt.Sprint([]int{1})},
		{"headers phase absent without trace", res.Phases[probe.PhaseHeaders], time.Duration(0)},
		{"first_token phase", res.Phases[probe.PhaseFirstToken], ms(290)},
		{"decode phase", res.Phases[probe.PhaseDecode], ms(40)},
		{"chunks", res.Chunks, 2},
		{"output tokens", res.OutputTokens, 2},
		{"prompt tokens", res.PromptTokens, 5},
		{"text", res.Text, "144"},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
}

// TestRequesterRealTiming checks the client against a server that writes
// events at known times: measured values may only be later than the
// server's schedule, and by little.
func TestRequesterRealTiming(t *testing.T) {
	const (
		prefill = 60 * time.Millisecond
		step    = 40 * time.Millisecond
		slack   = 250 * time.Millisecond // generous: the test machine is shared
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		fl := w.(http.Flusher)
		fl.Flush()
		time.Sleep(prefill)
		for i, e := range chatOK {
			if i >= 2 {
				time.Sleep(step)
			}
			fmt.Fprintf(w, "data: %s\n\n", e)
			fl.Flush()
		}
		fmt.Fprint(w, "data: [DONE]\n\n")
	}))
	defer srv.Close()
	r := newTestRequester(t, rqTarget(srv.URL), rqProbe(config.APIChat), Options{})
	res := doRequest(context.Background(), r, 1)
	if res.Disposition != probe.Accepted {
		t.Fatalf("got %s/%s %s", res.Disposition, res.Reason, res.Error)
	}
	within := func(name string, got, want time.Duration) {
		if got < want || got > want+slack {
			t.Errorf("%s = %v, want in [%v, %v]", name, got, want, want+slack)
		}
	}
	within("ttft", res.TTFT, prefill)
	within("e2el", res.E2EL, prefill+step)
	if len(res.ITLs) != 1 {
		t.Fatalf("ITLs = %v, want one gap", res.ITLs)
	}
	within("itl", res.ITLs[0], step-10*time.Millisecond)
	for _, ph := range []string{probe.PhaseConnect, probe.PhaseHeaders, probe.PhaseFirstToken, probe.PhaseDecode} {
		if _, ok := res.Phases[ph]; !ok {
			t.Errorf("phase %s missing from %v", ph, res.Phases)
		}
	}
	within("first_token phase", res.Phases[probe.PhaseFirstToken], prefill-10*time.Millisecond)
	// A reused connection has no connect phase.
	res = doRequest(context.Background(), r, 2)
	if _, ok := res.Phases[probe.PhaseConnect]; ok || !slices.Contains([]probe.Disposition{probe.Accepted}, res.Disposition) {
		t.Errorf("second request: phases %v, disposition %s", res.Phases, res.Disposition)
	}
}
