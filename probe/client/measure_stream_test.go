package client

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"

	"github.com/vllm-prober/vllm-prober/config"
	"github.com/vllm-prober/vllm-prober/internal/testclock"
	"github.com/vllm-prober/vllm-prober/probe"
)

// scriptedPiece is a run of body bytes that arrives at ms after t0.
type scriptedPiece struct {
	ms   int
	data string
}

// scriptedTransport answers with a stream whose bytes arrive at scripted
// times of the fake clock, so the whole request path can be checked exactly.
type scriptedTransport struct {
	clock     *testclock.Manual
	t0        time.Time
	headersMS int
	pieces    []scriptedPiece
}

func (s *scriptedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	_, _ = io.Copy(io.Discard, req.Body)
	s.clock.Set(s.t0.Add(time.Duration(s.headersMS) * time.Millisecond))
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
	b.s.clock.Set(b.s.t0.Add(time.Duration(pc.ms) * time.Millisecond))
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
	clock := testclock.New(time.Unix(7000, 0))
	second := sse(chatOK[2])
	tr := &scriptedTransport{clock: clock, t0: clock.Now(), headersMS: 20, pieces: []scriptedPiece{
		{ms: 300, data: sse(chatOK[0])},               // role chunk: not a token
		{ms: 310, data: sse(chatOK[1]) + second[:20]}, // first token; the next event split
		{ms: 350, data: second[20:]},
		{ms: 360, data: sse(chatOK[3]) + "data: [DONE]\n\n"},
	}}
	p := rqProbe(config.APIChat)
	p.SLO = config.SLO{TTFT: model.Duration(300 * time.Millisecond)}
	r := newTestRequester(t, rqTarget("http://127.0.0.1:1"), p, Options{Now: clock.Now})
	r.client.Transport = tr
	res := &probe.Result{Seq: 1, Scheduled: clock.Now().Add(-5 * time.Millisecond)}
	r.Do(context.Background(), res)

	checkAll(t, []check{
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
	})
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
	url := pausedStream(t, []pausedEvent{
		{prefill, chatOK[0]}, {0, chatOK[1]}, {step, chatOK[2]}, {step, chatOK[3]},
	}, nil)
	r := newTestRequester(t, rqTarget(url), rqProbe(config.APIChat), Options{})
	res := doRequest(context.Background(), r, 1)
	if res.Disposition != probe.Accepted {
		t.Fatalf("got %s/%s %s", res.Disposition, res.Reason, res.Error)
	}
	within := slackCheck(t, slack)
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

// TestChatLatencyEndsAtLastToken: E2EL and TPOT end at the last
// token-carrying event; the usage-only chunk (choices empty) that arrives
// well after it does not move the end.
func TestChatLatencyEndsAtLastToken(t *testing.T) {
	const usageLate = 600 * time.Millisecond
	url := pausedStream(t, []pausedEvent{
		{0, chatOK[0]}, {20 * time.Millisecond, chatOK[1]}, {40 * time.Millisecond, chatOK[2]},
		{usageLate, chatOK[3]},
	}, nil)
	r := newTestRequester(t, rqTarget(url), rqProbe("chat"), Options{})
	res := doRequest(context.Background(), r, 1)
	if res.Disposition != probe.Accepted || res.OutputTokens != 2 || !res.UsageFromServer {
		t.Fatalf("got %s/%s %q, %d output tokens, usage %v", res.Disposition, res.Reason, res.Error, res.OutputTokens, res.UsageFromServer)
	}
	if res.E2EL >= usageLate || res.Elapsed < usageLate {
		t.Errorf("e2el %v, elapsed %v: the usage chunk %v after the last token moved the end", res.E2EL, res.Elapsed, usageLate)
	}
	if last := res.TTFT + res.ITLs[len(res.ITLs)-1]; res.E2EL != last {
		t.Errorf("e2el %v, want TTFT + the last gap = %v", res.E2EL, last)
	}
	if want := res.E2EL - res.TTFT; res.TPOT != want {
		t.Errorf("tpot %v, want (e2el - ttft) / (2 - 1) = %v", res.TPOT, want)
	}
	if res.Phases[probe.PhaseDecode] != res.E2EL-res.TTFT {
		t.Errorf("decode phase %v, want e2el - ttft = %v", res.Phases[probe.PhaseDecode], res.E2EL-res.TTFT)
	}
}

// TestModelCheckEveryEvent: the model check compares every event's model,
// so a stream whose events disagree fails check:model wherever the other
// model appears, even when the first event names the expected one.
func TestModelCheckEveryEvent(t *testing.T) {
	other := func(e string) string { return strings.Replace(e, `"model":"m"`, `"model":"other"`, 1) }
	for _, tc := range []struct {
		name   string
		events []string
		fails  bool
	}{
		{"every event agrees", chatOK, false},
		{"a token event differs", []string{chatOK[0], chatOK[1], other(chatOK[2]), chatOK[3]}, true},
		{"the usage chunk differs", []string{chatOK[0], chatOK[1], chatOK[2], other(chatOK[3])}, true},
		{"the first event differs", []string{other(chatOK[0]), chatOK[1], chatOK[2], chatOK[3]}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var events []pausedEvent
			for _, e := range tc.events {
				events = append(events, pausedEvent{0, e})
			}
			r := newTestRequester(t, rqTarget(pausedStream(t, events, nil)), rqProbe("chat"), Options{})
			res := doRequest(context.Background(), r, 1)
			failed := slices.Contains(res.QualityFailures, probe.CheckModel)
			if failed != tc.fails {
				t.Errorf("check:model failed %v, want %v (disposition %s, failures %v)", failed, tc.fails, res.Disposition, res.QualityFailures)
			}
			if want := map[bool]probe.Disposition{false: probe.Accepted, true: probe.QualityFailure}[tc.fails]; res.Disposition != want {
				t.Errorf("disposition %s, want %s", res.Disposition, want)
			}
		})
	}
}
