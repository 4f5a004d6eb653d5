package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"testing"
	"time"

	"github.com/prometheus/common/model"

	"github.com/vllm-prober/vllm-prober/config"
	"github.com/vllm-prober/vllm-prober/probe"
)

// Chat events of a good two-token answer, as vLLM streams them.
var chatOK = []string{
	`{"id":"chatcmpl-1","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}],"usage":{"prompt_tokens":5,"total_tokens":5,"completion_tokens":0}}`,
	`{"id":"chatcmpl-1","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{"content":"14"},"logprobs":null,"finish_reason":null}],"usage":{"prompt_tokens":5,"total_tokens":6,"completion_tokens":1}}`,
	`{"id":"chatcmpl-1","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{"content":"4"},"logprobs":null,"finish_reason":"stop","stop_reason":null}],"usage":{"prompt_tokens":5,"total_tokens":7,"completion_tokens":2}}`,
	`{"id":"chatcmpl-1","object":"chat.completion.chunk","model":"m","choices":[],"usage":{"prompt_tokens":5,"total_tokens":7,"completion_tokens":2}}`,
}

// writeEvents writes events as SSE, flushing each, then [DONE] if done.
func writeEvents(w http.ResponseWriter, events []string, done bool) {
	w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	for _, e := range events {
		fmt.Fprintf(w, "data: %s\n\n", e)
		w.(http.Flusher).Flush()
	}
	if done {
		fmt.Fprint(w, "data: [DONE]\n\n")
	}
}

func streamHandler(events []string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) { writeEvents(w, events, true) }
}

func rqTarget(url string) config.Target {
	return config.Target{Name: "t", URL: url, Model: "m"}
}

func rqProbe(api string) config.Probe {
	return config.Probe{
		Name: "p", API: api, Timeout: model.Duration(2 * time.Second),
		Request: config.Request{MaxTokens: 16},
		Workload: config.Workload{Prompts: []config.Prompt{{
			Prompt: "What is 12*12?", Messages: []config.Message{{Role: "user", Content: "What is 12*12?"}},
		}}},
		Quality: config.Quality{FinishReasons: []string{"stop", "length"}, MinOutputTokens: 1},
	}
}

func newTestRequester(t *testing.T, tg config.Target, p config.Probe, o Options) *Requester {
	t.Helper()
	r, err := New(tg, p, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	return r
}

// scriptedRequester is a Requester of p whose requests go to tr instead
// of the network (a scripted or recording transport).
func scriptedRequester(t *testing.T, tr http.RoundTripper, p config.Probe, o Options) *Requester {
	t.Helper()
	r := newTestRequester(t, rqTarget("http://127.0.0.1:1"), p, o)
	r.client.Transport = tr
	return r
}

func doRequest(ctx context.Context, r *Requester, seq uint64) *probe.Result {
	res := &probe.Result{Seq: seq, Target: "t", Probe: "p", Scheduled: time.Now()}
	r.Do(ctx, res)
	return res
}

// serve runs h on a loopback test server until the test ends and returns
// its URL.
func serve(t testing.TB, h http.Handler) string {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL
}

// pausedEvent is one SSE event a test server writes after a pause.
type pausedEvent struct {
	after time.Duration
	data  string
}

// pausedStream serves one chat stream whose events are written, flushed, at
// the given pauses, then [DONE]. check, if not nil, sees each request body.
func pausedStream(t *testing.T, events []pausedEvent, check func(body map[string]any)) string {
	t.Helper()
	return serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body map[string]any
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if check != nil {
			check(body)
		}
		w.Header().Set("Content-Type", "text/event-stream")
		fl := w.(http.Flusher)
		fl.Flush()
		for _, e := range events {
			time.Sleep(e.after)
			fmt.Fprintf(w, "data: %s\n\n", e.data)
			fl.Flush()
		}
		fmt.Fprint(w, "data: [DONE]\n\n")
	}))
}

// evenly spaces events gap apart, the first at once.
func evenly(gap time.Duration, events []string) []pausedEvent {
	out := make([]pausedEvent, len(events))
	for i, e := range events {
		out[i] = pausedEvent{data: e}
		if i > 0 {
			out[i].after = gap
		}
	}
	return out
}

func mustRegexp(t *testing.T, src string) config.Regexp {
	t.Helper()
	return config.Regexp{Regexp: regexp.MustCompile(src), Source: src}
}

// check is one named value of a result and the value it must have.
type check struct {
	name      string
	got, want any
}

// checkAll reports every check whose value is not the wanted one.
func checkAll(t *testing.T, checks []check) {
	t.Helper()
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
}

// slackCheck returns a check that a measured time is no earlier than the
// server's schedule (want) and later by at most slack.
func slackCheck(t *testing.T, slack time.Duration) func(name string, got, want time.Duration) {
	return func(name string, got, want time.Duration) {
		t.Helper()
		if got < want || got > want+slack {
			t.Errorf("%s = %v, want in [%v, %v]", name, got, want, want+slack)
		}
	}
}
