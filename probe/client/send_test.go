package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"

	"github.com/vllm-prober/vllm-prober/config"
	"github.com/vllm-prober/vllm-prober/internal/daemontest"
	"github.com/vllm-prober/vllm-prober/internal/testclock"
	"github.com/vllm-prober/vllm-prober/internal/testfile"
	"github.com/vllm-prober/vllm-prober/probe"
	"github.com/vllm-prober/vllm-prober/probe/workload"
)

func TestRequesterFaults(t *testing.T) {
	badRequest := `{"error":{"message":"max_tokens=99999 cannot be greater than max_model_len=4096.","type":"BadRequestError","param":"max_tokens","code":400}}`
	tests := []struct {
		name      string
		handler   http.HandlerFunc
		edit      func(o *Options, p *config.Probe)
		want      probe.Disposition
		reason    string
		status    int
		errRE     string
		wantFlags []string
		absent    []string // phases that did not complete
	}{
		{name: "ok", handler: streamHandler(chatOK), want: probe.Accepted, status: 200},
		{name: "400 with vllm error", handler: func(w http.ResponseWriter, _ *http.Request) { http.Error(w, badRequest, http.StatusBadRequest) },
			want: probe.ServerFailure, reason: probe.ReasonHTTP4xx, status: 400, errRE: `^http 400: BadRequestError: max_tokens=99999 cannot`},
		{name: "401 string error", handler: func(w http.ResponseWriter, _ *http.Request) {
			http.Error(w, `{"error":"Unauthorized"}`, http.StatusUnauthorized)
		},
			want: probe.ServerFailure, reason: probe.ReasonHTTP4xx, status: 401, errRE: `^http 401: Unauthorized$`},
		{name: "429", handler: func(w http.ResponseWriter, _ *http.Request) { http.Error(w, "slow down", http.StatusTooManyRequests) },
			want: probe.ServerFailure, reason: probe.ReasonHTTP429, status: 429, errRE: `^http 429: slow down$`},
		{name: "500 with vllm error", handler: func(w http.ResponseWriter, _ *http.Request) {
			http.Error(w, `{"error":{"message":"Internal server error","type":"InternalServerError","param":null,"code":500}}`, http.StatusInternalServerError)
		}, want: probe.ServerFailure, reason: probe.ReasonHTTP5xx, status: 500, errRE: `^http 500: InternalServerError: Internal server error$`},
		{name: "503 empty body", handler: func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusServiceUnavailable) },
			want: probe.ServerFailure, reason: probe.ReasonHTTP5xx, status: 503, errRE: `^http 503: Service Unavailable$`},
		{name: "error event", handler: streamHandler([]string{chatOK[0], `{"error": {"message": "Internal server error", "type": "InternalServerError", "param": null, "code": 500}}`}),
			want: probe.ServerFailure, reason: probe.ReasonStreamError, status: 200, errRE: `^InternalServerError: Internal server error$`},
		{name: "malformed event", handler: streamHandler([]string{chatOK[0], `{"choices":[{"delta":`}),
			want: probe.ServerFailure, reason: probe.ReasonProtocol, status: 200, errRE: `^malformed event: `},
		{name: "oversized line", handler: streamHandler([]string{chatOK[0], `{"choices":[{"delta":{"content":"` + strings.Repeat("x", 5000) + `"}}]}`}),
			edit: func(o *Options, _ *config.Probe) { o.MaxLineBytes = 4096 },
			want: probe.ServerFailure, reason: probe.ReasonProtocol, status: 200, errRE: `line longer than the limit`},
		{name: "huge body", handler: streamHandler(slices.Repeat(chatOK[1:2], 200)),
			edit: func(o *Options, _ *config.Probe) { o.MaxBodyBytes = 8192 },
			want: probe.ServerFailure, reason: probe.ReasonProtocol, status: 200, errRE: `body longer than the limit`},
		{name: "no done", handler: func(w http.ResponseWriter, _ *http.Request) { writeEvents(w, chatOK, false) },
			want: probe.ServerFailure, reason: probe.ReasonNoDone, status: 200, errRE: `without \[DONE\]`},
		{name: "text/html 200", handler: func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "text/html")
			fmt.Fprint(w, "<html>proxy login</html>")
		}, want: probe.ServerFailure, reason: probe.ReasonProtocol, status: 200, errRE: `unexpected content type "text/html"`},
		{name: "reset mid-stream", handler: resetHandler, want: probe.ServerFailure, reason: probe.ReasonDisconnect, status: 200},
		{name: "stall times out", handler: stallHandler,
			edit: func(_ *Options, p *config.Probe) { p.Timeout = model.Duration(200 * time.Millisecond) },
			want: probe.ClientTimeout, reason: probe.ReasonTimeout, status: 200, errRE: `probe timeout`, absent: []string{probe.PhaseFirstToken, probe.PhaseDecode}},
		{name: "slow headers time out", handler: func(_ http.ResponseWriter, r *http.Request) { waitGone(r) },
			edit: func(_ *Options, p *config.Probe) { p.Timeout = model.Duration(200 * time.Millisecond) },
			want: probe.ClientTimeout, reason: probe.ReasonTimeout, errRE: `probe timeout`, absent: []string{probe.PhaseHeaders, probe.PhaseFirstToken}},
		{name: "wrong model", handler: streamHandler([]string{strings.ReplaceAll(chatOK[1], `"m"`, `"x"`), chatOK[3]}),
			want: probe.QualityFailure, reason: probe.ReasonQuality, status: 200},
		{name: "no usage", handler: streamHandler([]string{`{"model":"m","choices":[{"delta":{"content":"144"},"finish_reason":"stop"}]}`}),
			want: probe.Accepted, status: 200, wantFlags: []string{flagNoUsage}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			url := serve(t, tc.handler)
			o, p := Options{}, rqProbe(config.APIChat)
			if tc.edit != nil {
				tc.edit(&o, &p)
			}
			res := doRequest(context.Background(), newTestRequester(t, rqTarget(url), p, o), 1)
			if res.Disposition != tc.want || res.Reason != tc.reason || res.HTTPStatus != tc.status {
				t.Fatalf("got %s/%s status %d (err %q), want %s/%s status %d", res.Disposition, res.Reason, res.HTTPStatus, res.Error,
					tc.want, tc.reason, tc.status)
			}
			if tc.errRE != "" && !regexp.MustCompile(tc.errRE).MatchString(res.Error) {
				t.Fatalf("error %q does not match %q", res.Error, tc.errRE)
			}
			if tc.errRE == "" && tc.want == probe.Accepted && res.Error != "" {
				t.Fatalf("unexpected error %q", res.Error)
			}
			if !slices.Equal(res.Flags, tc.wantFlags) {
				t.Fatalf("flags = %v, want %v", res.Flags, tc.wantFlags)
			}
			if res.Sent.IsZero() {
				t.Fatal("Sent not set")
			}
			for _, ph := range tc.absent {
				if d, ok := res.Phases[ph]; ok {
					t.Fatalf("phase %s = %v recorded, want absent", ph, d)
				}
			}
		})
	}
}

// resetHandler sends one event and then resets the connection.
func resetHandler(w http.ResponseWriter, _ *http.Request) {
	writeEvents(w, chatOK[:2], false)
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	conn.Close()
}

// stallHandler sends the role chunk and then nothing until the client goes.
func stallHandler(w http.ResponseWriter, r *http.Request) {
	writeEvents(w, chatOK[:1], false)
	w.(http.Flusher).Flush()
	waitGone(r)
}

// waitGone waits until the client goes away. The server notices that only
// once the request body has been read.
func waitGone(r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	select {
	case <-r.Context().Done():
	case <-time.After(10 * time.Second):
	}
}

func TestRequesterConnectionErrors(t *testing.T) {
	refused := "http://" + daemontest.FreeAddr(t)
	tlsSrv := httptest.NewUnstartedServer(streamHandler(chatOK))
	tlsSrv.Config.ErrorLog = log.New(io.Discard, "", 0)
	tlsSrv.StartTLS()
	defer tlsSrv.Close()
	tests := []struct {
		name   string
		url    string
		reason string
	}{
		{name: "connection refused", url: refused, reason: probe.ReasonConnect},
		{name: "untrusted certificate", url: tlsSrv.URL, reason: probe.ReasonTLS},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := doRequest(context.Background(), newTestRequester(t, rqTarget(tc.url), rqProbe(config.APIChat), Options{}), 1)
			if res.Disposition != probe.ServerFailure || res.Reason != tc.reason {
				t.Fatalf("got %s/%s (%s), want server_failure/%s", res.Disposition, res.Reason, res.Error, tc.reason)
			}
			if strings.Contains(res.Error, "http://") || strings.Contains(res.Error, "https://") {
				t.Fatalf("error repeats the URL: %q", res.Error)
			}
		})
	}
}

func TestClassifyDNSError(t *testing.T) {
	res := &probe.Result{}
	err := fmt.Errorf("post: %w", &net.DNSError{Err: "no such host", Name: "vllm.invalid", IsNotFound: true})
	classifyTransportError(context.Background(), res, err, &phaseTrace{now: time.Now})
	if res.Disposition != probe.ServerFailure || res.Reason != probe.ReasonDNS {
		t.Fatalf("got %s/%s, want server_failure/dns", res.Disposition, res.Reason)
	}
}

func TestRequesterCancellation(t *testing.T) {
	url := serve(t, http.HandlerFunc(stallHandler))
	r := newTestRequester(t, rqTarget(url), rqProbe(config.APIChat), Options{})
	tests := []struct {
		name   string
		cause  error
		want   probe.Disposition
		reason string
	}{
		{name: "shutdown", cause: probe.ErrShutdown, want: probe.Cancelled, reason: probe.ReasonShutdown},
		{name: "removed", cause: probe.ErrRemoved, want: probe.Cancelled, reason: probe.ReasonRemoved},
		{name: "caller deadline", cause: context.DeadlineExceeded, want: probe.ClientTimeout, reason: probe.ReasonTimeout},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancelCause(context.Background())
			time.AfterFunc(100*time.Millisecond, func() { cancel(tc.cause) })
			start := time.Now()
			res := doRequest(ctx, r, 1)
			if res.Disposition != tc.want || res.Reason != tc.reason {
				t.Fatalf("got %s/%s (%s), want %s/%s", res.Disposition, res.Reason, res.Error, tc.want, tc.reason)
			}
			if d := time.Since(start); d > time.Second {
				t.Fatalf("Do returned after %v, want soon after cancellation", d)
			}
		})
	}
	t.Run("already cancelled before discovery", func(t *testing.T) {
		ctx, cancel := context.WithCancelCause(context.Background())
		cancel(probe.ErrShutdown)
		res := doRequest(ctx, r, 1)
		if res.Disposition != probe.Cancelled || res.Reason != probe.ReasonShutdown || !res.Sent.IsZero() {
			t.Fatalf("got %s/%s sent %v, want cancelled/shutdown never sent", res.Disposition, res.Reason, res.Sent)
		}
	})
}

func TestLimitedBody(t *testing.T) {
	tests := []struct {
		name    string
		body    string
		max     int64
		wantErr error
	}{
		{name: "under", body: "abc", max: 4, wantErr: nil},
		{name: "exact", body: "abcd", max: 4, wantErr: nil},
		{name: "over", body: "abcde", max: 4, wantErr: errBodyTooLong},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b, err := io.ReadAll(&limitedBody{r: strings.NewReader(tc.body), n: tc.max})
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("err = %v, want %v", err, tc.wantErr)
			}
			if tc.wantErr == nil && string(b) != tc.body {
				t.Fatalf("body = %q", b)
			}
		})
	}
}

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
	r := scriptedRequester(t, tr, p, Options{Now: clock.Now})
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

// reasoningChat is a vLLM-shaped chat stream of a reasoning model: role
// chunk, three reasoning deltas, the answer in two content deltas, the
// finish chunk and the usage chunk with reasoning_tokens.
var reasoningChat = []string{
	`{"id":"chatcmpl-r","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}],"usage":{"prompt_tokens":5,"total_tokens":5,"completion_tokens":0}}`,
	`{"id":"chatcmpl-r","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{"reasoning":"12*12 is"},"logprobs":null,"finish_reason":null}],"usage":{"prompt_tokens":5,"total_tokens":6,"completion_tokens":1}}`,
	`{"id":"chatcmpl-r","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{"reasoning":" 145? no,"},"logprobs":null,"finish_reason":null}],"usage":{"prompt_tokens":5,"total_tokens":7,"completion_tokens":2}}`,
	`{"id":"chatcmpl-r","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{"reasoning":" {not json"},"logprobs":null,"finish_reason":null}],"usage":{"prompt_tokens":5,"total_tokens":8,"completion_tokens":3}}`,
	`{"id":"chatcmpl-r","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{"content":"14"},"logprobs":null,"finish_reason":null}],"usage":{"prompt_tokens":5,"total_tokens":9,"completion_tokens":4}}`,
	`{"id":"chatcmpl-r","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{"content":"4"},"logprobs":null,"finish_reason":"stop","stop_reason":null}],"usage":{"prompt_tokens":5,"total_tokens":10,"completion_tokens":5}}`,
	`{"id":"chatcmpl-r","object":"chat.completion.chunk","model":"m","choices":[],"usage":{"prompt_tokens":5,"total_tokens":10,"completion_tokens":5,"completion_tokens_details":{"reasoning_tokens":3}}}`,
}

// TestRequesterReasoningExactTiming runs a reasoning stream through the
// whole requester with an injected clock: TTFT is the first reasoning
// event, TTFA the first content event, and the TTFA objective is judged.
func TestRequesterReasoningExactTiming(t *testing.T) {
	clock := testclock.New(time.Unix(9000, 0))
	tr := &scriptedTransport{clock: clock, t0: clock.Now(), headersMS: 20, pieces: []scriptedPiece{
		{ms: 100, data: sse(reasoningChat[0])},
		{ms: 110, data: sse(reasoningChat[1])},
		{ms: 150, data: sse(reasoningChat[2])},
		{ms: 190, data: sse(reasoningChat[3])},
		{ms: 400, data: sse(reasoningChat[4])},
		{ms: 420, data: sse(reasoningChat[5:]...) + "data: [DONE]\n\n"},
	}}
	p := rqProbe(config.APIChat)
	p.SLO = config.SLO{TTFT: model.Duration(300 * time.Millisecond), TTFA: model.Duration(300 * time.Millisecond)}
	r := scriptedRequester(t, tr, p, Options{Now: clock.Now})
	res := &probe.Result{Seq: 1, Scheduled: clock.Now()}
	r.Do(context.Background(), res)

	checkAll(t, []check{
		{"disposition", res.Disposition, probe.LatencyFailure},
		{"slo", fmt.Sprint(res.SLOViolations), fmt.Sprint([]string{probe.SLOTTFA})},
		{"ttft", res.TTFT, ms(110)},
		{"ttfa", res.TTFA, ms(400)},
		{"e2el", res.E2EL, ms(420)},
		{"reasoning tokens (server's)", res.ReasoningTokens, 3},
		{"reasoning events", res.ReasoningEvents, 3},
		{"output tokens", res.OutputTokens, 5},
		{"text", res.Text, "144"},
		{"reasoning", res.Reasoning, "12*12 is 145? no, {not json"},
	})
}

// TestRequesterReasoningRealTiming checks TTFA against a server that writes
// each event a known time after the previous one: TTFT comes one gap after
// the role chunk, TTFA three reasoning gaps later.
func TestRequesterReasoningRealTiming(t *testing.T) {
	const (
		gap   = 50 * time.Millisecond
		slack = 250 * time.Millisecond // generous: the test machine is shared
	)
	url := pausedStream(t, evenly(gap, reasoningChat), nil)
	r := newTestRequester(t, rqTarget(url), rqProbe(config.APIChat), Options{})
	res := doRequest(context.Background(), r, 1)
	if res.Disposition != probe.Accepted {
		t.Fatalf("got %s/%s %s %v", res.Disposition, res.Reason, res.Error, res.QualityFailures)
	}
	within := slackCheck(t, slack)
	within("ttft", res.TTFT, gap)
	within("ttfa", res.TTFA, 4*gap)
	within("ttfa - ttft", res.TTFA-res.TTFT, 3*gap-10*time.Millisecond)
	if res.ReasoningTokens != 3 {
		t.Errorf("reasoning tokens = %d, want 3", res.ReasoningTokens)
	}
}

// TestRequesterChecksJudgeAnswer: a check the reasoning would pass or fail
// judges the answer only.
func TestRequesterChecksJudgeAnswer(t *testing.T) {
	url := pausedStream(t, evenly(0, reasoningChat), nil)
	tests := []struct {
		name    string
		quality func(q *config.Quality)
		expect  *config.Expect
		want    []string
	}{
		{"regex only the reasoning matches fails", func(q *config.Quality) { q.Regex = mustRegexp(t, `145`) }, nil, []string{probe.CheckRegex}},
		{"regex the answer matches passes though the reasoning does not", func(q *config.Quality) { q.Regex = mustRegexp(t, `^144$`) }, nil, nil},
		{"json answer passes though the reasoning is not JSON", func(q *config.Quality) { q.JSON = true }, nil, nil},
		{"expect contains only in the reasoning fails", nil, &config.Expect{Contains: "no,"}, []string{probe.CheckExpect}},
		{"expect regex on the answer passes", nil, &config.Expect{Regex: mustRegexp(t, `\b144\b`)}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := rqProbe(config.APIChat)
			if tc.quality != nil {
				tc.quality(&p.Quality)
			}
			if tc.expect != nil {
				p.Workload.Prompts[0].Expect = *tc.expect
			}
			r := newTestRequester(t, rqTarget(url), p, Options{})
			res := doRequest(context.Background(), r, 1)
			if !slices.Equal(res.QualityFailures, tc.want) {
				t.Errorf("quality failures = %v, want %v (%s %s)", res.QualityFailures, tc.want, res.Disposition, res.Error)
			}
		})
	}
}

// toolCallChat streams a call of get_weather in fragments, vLLM-style:
// the first fragment names the function and id, later ones carry
// arguments; %s is the second half of the arguments.
const toolCallChat = `{"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":"","tool_calls":[]},"finish_reason":null}]}
{"model":"m","choices":[{"index":0,"delta":{"tool_calls":[{"id":"chatcmpl-tool-1","type":"function","index":0,"function":{"name":"get_weather","arguments":""}}]},"finish_reason":null}]}
{"model":"m","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"city\": "}}]},"finish_reason":null}]}
{"model":"m","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"%s"}}]},"finish_reason":null}]}
{"model":"m","choices":[{"index":0,"delta":{"content":""},"finish_reason":"tool_calls","stop_reason":null}]}
{"model":"m","choices":[],"usage":{"prompt_tokens":50,"total_tokens":62,"completion_tokens":12}}`

// TestRequesterToolCall sends tools through request.extra and judges the
// assembled call against quality.tool_call's schema.
func TestRequesterToolCall(t *testing.T) {
	schema := testfile.Temp(t, "args.json", `{"type":"object","required":["city"],"properties":{"city":{"type":"string"}}}`)
	tools := []any{map[string]any{"type": "function", "function": map[string]any{"name": "get_weather",
		"parameters": map[string]any{"type": "object"}}}}
	tests := []struct {
		name     string
		rest     string // the second half of the arguments
		check    config.ToolCallCheck
		want     []string
		wantDisp probe.Disposition
	}{
		{"valid call", `\"Paris\"}`, config.ToolCallCheck{Name: "get_weather", ArgumentsSchema: schema}, nil, probe.Accepted},
		{"arguments not matching the schema", `42}`, config.ToolCallCheck{Name: "get_weather", ArgumentsSchema: schema}, []string{probe.CheckToolCall}, probe.QualityFailure},
		{"arguments not JSON", `\"Par`, config.ToolCallCheck{Name: "get_weather"}, []string{probe.CheckToolCall}, probe.QualityFailure},
		{"another function", `\"Paris\"}`, config.ToolCallCheck{Name: "get_time"}, []string{probe.CheckToolCall}, probe.QualityFailure},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got map[string]any
			events := strings.Split(fmt.Sprintf(toolCallChat, tc.rest), "\n")
			url := pausedStream(t, evenly(0, events), func(body map[string]any) { got = body })
			p := rqProbe(config.APIChat)
			p.Request.Extra = map[string]any{"tools": tools, "tool_choice": "required"}
			p.Quality.FinishReasons = []string{"tool_calls"}
			p.Quality.ToolCall = &tc.check
			r := newTestRequester(t, rqTarget(url), p, Options{})
			res := doRequest(context.Background(), r, 1)
			if res.Disposition != tc.wantDisp || !slices.Equal(res.QualityFailures, tc.want) {
				t.Errorf("got %s %v (%s), want %s %v", res.Disposition, res.QualityFailures, res.Error, tc.wantDisp, tc.want)
			}
			if len(res.ToolCalls) != 1 || res.ToolCalls[0].ID != "chatcmpl-tool-1" || res.ToolCalls[0].Name != "get_weather" {
				t.Errorf("tool calls = %+v", res.ToolCalls)
			}
			if got["tool_choice"] != "required" || fmt.Sprint(got["tools"]) != fmt.Sprint(tools) {
				t.Errorf("request body tools/tool_choice = %v / %v, want them passed through", got["tools"], got["tool_choice"])
			}
		})
	}
}

// embeddingJSON is vLLM's answer to one input, with the given vector
// values (JSON text each) and usage.
func embeddingJSON(model string, values []string, usage bool) string {
	u := ""
	if usage {
		u = `,"usage":{"prompt_tokens":7,"total_tokens":7,"completion_tokens":0,"prompt_tokens_details":null}`
	}
	return fmt.Sprintf(`{"id":"embd-1","object":"list","created":1764600000,"model":%q,"data":[{"index":0,"object":"embedding","embedding":[%s]}]%s}`,
		model, strings.Join(values, ","), u)
}

// vector returns n values, then sets the values of edits by index.
func vector(n int, edits map[int]string) []string {
	v := make([]string, n)
	for i := range v {
		v[i] = fmt.Sprintf("%.6f", float64(i%7)/7-0.5)
	}
	for i, s := range edits {
		v[i] = s
	}
	return v
}

func jsonHandler(status int, body string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		fmt.Fprint(w, body)
	}
}

func embeddingProbe(dim int) config.Probe {
	return config.Probe{
		Name: "p", API: config.APIEmbeddings, Timeout: model.Duration(2 * time.Second),
		Workload: config.Workload{Prompts: []config.Prompt{{Prompt: "the capital of France"}}},
		Quality:  config.Quality{EmbeddingDim: dim},
	}
}

func TestEmbeddings(t *testing.T) {
	good := embeddingJSON("m", vector(384, nil), true)
	tests := []struct {
		name      string
		handler   http.HandlerFunc
		timeout   time.Duration
		want      probe.Disposition
		reason    string
		checks    []string
		flags     []string
		errRE     string
		dim       int // Result.EmbeddingDim
		notFinite int
	}{
		{name: "good vector", handler: jsonHandler(200, good), want: probe.Accepted, dim: 384},
		{name: "wrong dim", handler: jsonHandler(200, embeddingJSON("m", vector(512, nil), true)),
			want: probe.QualityFailure, reason: probe.ReasonQuality, checks: []string{probe.CheckEmbeddingDim}, dim: 512},
		{name: "non-numeric values", handler: jsonHandler(200, embeddingJSON("m", vector(384, map[int]string{3: "null", 9: `"NaN"`, 11: "true"}), true)),
			want: probe.QualityFailure, reason: probe.ReasonQuality, checks: []string{probe.CheckEmbeddingDim}, dim: 384, notFinite: 3},
		{name: "overflowing number", handler: jsonHandler(200, embeddingJSON("m", vector(384, map[int]string{0: "1e400", 1: "-2e308", 2: "1e-400"}), true)),
			want: probe.QualityFailure, reason: probe.ReasonQuality, checks: []string{probe.CheckEmbeddingDim}, dim: 384, notFinite: 2},
		{name: "wrong model", handler: jsonHandler(200, embeddingJSON("x", vector(384, nil), true)),
			want: probe.QualityFailure, reason: probe.ReasonQuality, checks: []string{probe.CheckModel}, dim: 384},
		{name: "no usage", handler: jsonHandler(200, embeddingJSON("m", vector(384, nil), false)),
			want: probe.Accepted, flags: []string{flagNoUsage}, dim: 384},
		{name: "5xx", handler: jsonHandler(500, `{"error":{"message":"Internal server error","type":"InternalServerError","param":null,"code":500}}`),
			want: probe.ServerFailure, reason: probe.ReasonHTTP5xx, errRE: `^http 500: InternalServerError: Internal server error$`},
		{name: "429", handler: jsonHandler(429, `{"error":"slow down"}`), want: probe.ServerFailure, reason: probe.ReasonHTTP429},
		{name: "malformed json", handler: jsonHandler(200, good[:len(good)/2]),
			want: probe.ServerFailure, reason: probe.ReasonProtocol, errRE: `^malformed embeddings response: unexpected end of JSON input$`},
		{name: "no vector", handler: jsonHandler(200, `{"model":"m","data":[],"usage":{"prompt_tokens":7}}`),
			want: probe.ServerFailure, reason: probe.ReasonProtocol, errRE: `: 0 vectors for one input$`},
		{name: "base64 vector", handler: jsonHandler(200, `{"model":"m","data":[{"index":0,"embedding":"AAAAAA=="}]}`),
			want: probe.ServerFailure, reason: probe.ReasonProtocol, errRE: `embedding is not an array$`},
		{name: "event stream", handler: streamHandler(chatOK),
			want: probe.ServerFailure, reason: probe.ReasonProtocol, errRE: `^unexpected content type "text/event-stream; charset=utf-8"$`},
		{name: "headers stall", handler: func(_ http.ResponseWriter, r *http.Request) { waitGone(r) }, timeout: 200 * time.Millisecond,
			want: probe.ClientTimeout, reason: probe.ReasonTimeout, errRE: `^probe timeout$`},
		{name: "body stall", timeout: 200 * time.Millisecond, handler: func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, good[:100])
			w.(http.Flusher).Flush()
			waitGone(r)
		}, want: probe.ClientTimeout, reason: probe.ReasonTimeout, errRE: `^probe timeout$`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			url := serve(t, tc.handler)
			p := embeddingProbe(384)
			if tc.timeout > 0 {
				p.Timeout = model.Duration(tc.timeout)
			}
			res := doRequest(context.Background(), newTestRequester(t, rqTarget(url), p, Options{}), 1)
			if res.Disposition != tc.want || res.Reason != tc.reason {
				t.Fatalf("got %s/%s (err %q), want %s/%s", res.Disposition, res.Reason, res.Error, tc.want, tc.reason)
			}
			if !slices.Equal(res.QualityFailures, tc.checks) || !slices.Equal(res.Flags, tc.flags) {
				t.Errorf("checks %v flags %v, want %v %v", res.QualityFailures, res.Flags, tc.checks, tc.flags)
			}
			if tc.errRE != "" && !regexp.MustCompile(tc.errRE).MatchString(res.Error) {
				t.Errorf("error %q does not match %q", res.Error, tc.errRE)
			}
			if tc.errRE == "" && res.Disposition != probe.ServerFailure && res.Error != "" {
				t.Errorf("unexpected error %q", res.Error)
			}
			if res.EmbeddingDim != tc.dim || res.EmbeddingNotFinite != tc.notFinite {
				t.Errorf("vector of %d values, %d not finite; want %d, %d", res.EmbeddingDim, res.EmbeddingNotFinite, tc.dim, tc.notFinite)
			}
			checkEmbeddingTiming(t, res)
		})
	}
}

// checkEmbeddingTiming: an embeddings request has E2EL (when its answer
// was read) and HTTP phases, never TTFT, ITL, TPOT or output tokens.
func checkEmbeddingTiming(t *testing.T, res *probe.Result) {
	t.Helper()
	if !res.Embeddings || res.TTFT != 0 || res.TPOT != 0 || len(res.ITLs) != 0 || res.OutputTokens != 0 || res.Chunks != 0 {
		t.Errorf("embeddings %v, ttft %v, tpot %v, itls %v, output tokens %d, chunks %d; want an embeddings request without tokens",
			res.Embeddings, res.TTFT, res.TPOT, res.ITLs, res.OutputTokens, res.Chunks)
	}
	if d, ok := res.ObservedTTFT(); ok {
		t.Errorf("ObservedTTFT = %v, want nothing to record", d)
	}
	for _, ph := range []string{probe.PhaseFirstToken, probe.PhaseDecode} {
		if d, ok := res.Phases[ph]; ok {
			t.Errorf("phase %s = %v, want absent", ph, d)
		}
	}
	read := res.Disposition == probe.Accepted || res.Disposition == probe.QualityFailure
	if read != (res.E2EL > 0) || (read && (res.E2EL > res.Elapsed || res.Phases[probe.PhaseHeaders] <= 0)) {
		t.Errorf("e2el %v, elapsed %v, headers %v: want E2EL within Elapsed exactly when the answer was read",
			res.E2EL, res.Elapsed, res.Phases[probe.PhaseHeaders])
	}
	if read && (!res.UsageFromServer || res.PromptTokens != 7) && !slices.Contains(res.Flags, flagNoUsage) {
		t.Errorf("prompt tokens %d (from server %v), want usage's 7", res.PromptTokens, res.UsageFromServer)
	}
	if res.Disposition == probe.ClientTimeout {
		if d, ok := res.ObservedE2EL(); !ok || d != res.Elapsed {
			t.Errorf("ObservedE2EL = %v %v, want the timeout censored at Elapsed %v", d, ok, res.Elapsed)
		}
	}
}

func TestEmbeddingsRequestShape(t *testing.T) {
	var c capture
	url := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.record(r)
		jsonHandler(200, embeddingJSON("m", vector(4, nil), true))(w, r)
	}))
	p := embeddingProbe(4)
	p.Request = config.Request{MaxTokens: 64, Extra: map[string]any{"dimensions": 4, "truncate_prompt_tokens": 512}}
	res := doRequest(context.Background(), newTestRequester(t, rqTarget(url), p, Options{}), 1)
	if res.Disposition != probe.Accepted {
		t.Fatalf("got %s/%s (%s)", res.Disposition, res.Reason, res.Error)
	}
	want := map[string]any{"model": "m", "input": "the capital of France", "encoding_format": "float",
		"dimensions": 4.0, "truncate_prompt_tokens": 512.0}
	if len(c.bodies) != 1 || fmt.Sprint(c.bodies[0]) != fmt.Sprint(want) {
		t.Errorf("body %v, want %v", c.bodies, want)
	}
	if c.paths[0] != "/v1/embeddings" || c.headers[0].Get("Accept") != "application/json" {
		t.Errorf("POST %s accepting %q, want /v1/embeddings accepting application/json", c.paths[0], c.headers[0].Get("Accept"))
	}
}

// TestEmbeddingsBodyLimit: an answer past Options.MaxBodyBytes is a
// protocol failure, not a truncated vector.
func TestEmbeddingsBodyLimit(t *testing.T) {
	url := serve(t, jsonHandler(200, embeddingJSON("m", vector(4096, nil), true)))
	res := doRequest(context.Background(), newTestRequester(t, rqTarget(url), embeddingProbe(4096), Options{MaxBodyBytes: 8192}), 1)
	if res.Disposition != probe.ServerFailure || res.Reason != probe.ReasonProtocol || !strings.Contains(res.Error, "body longer than the limit") {
		t.Fatalf("got %s/%s (%s), want server_failure/protocol", res.Disposition, res.Reason, res.Error)
	}
}

// TestRequestBodyStructMatchesMap: without request.extra the body is
// encoded from a struct, with it from a map; both give the same bytes for
// every API, timing and optional field.
func TestRequestBodyStructMatchesMap(t *testing.T) {
	seed := int64(7)
	for _, api := range []string{config.APICompletions, config.APIChat} {
		for _, timing := range []Timing{TimingProbe, TimingVLLMBench} {
			for _, ignoreEOS := range []bool{false, true} {
				for _, s := range []*int64{nil, &seed} {
					p := config.Probe{Name: "p", API: api, Request: config.Request{Temperature: 0.7, IgnoreEOS: ignoreEOS},
						Workload: config.Workload{Random: &config.RandomWorkload{InputTokens: 8, OutputTokens: 16, Seed: 1}}}
					r, err := New(config.Target{Name: "t", URL: "http://127.0.0.1:1", Model: "m"}, p, Options{Timing: timing})
					if err != nil {
						t.Fatal(err)
					}
					it := workload.Item{Prompt: "hello", Messages: []config.Message{{Role: "user", Content: "hi"}}, MaxTokens: 16, Seed: s}
					got, err := r.requestBody("m", it)
					r.Close()
					if err != nil {
						t.Fatal(err)
					}
					want, err := json.Marshal(r.bodyFields("m", it).withExtra(nil))
					if err != nil {
						t.Fatal(err)
					}
					if string(got) != string(want) {
						t.Errorf("%s, timing %d, ignore_eos %v, seed %v:\nstruct %s\nmap    %s", api, timing, ignoreEOS, s != nil, got, want)
					}
				}
			}
		}
	}
}
