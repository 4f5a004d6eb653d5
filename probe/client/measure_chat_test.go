package client

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vllm-prober/vllm-prober/probe"
)

// pausedEvent is one SSE event a test server writes after a pause.
type pausedEvent struct {
	after time.Duration
	data  string
}

// pausedStream serves one chat stream whose events are written, flushed, at
// the given pauses, then [DONE].
func pausedStream(t *testing.T, events []pausedEvent) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
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
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestChatLatencyEndsAtLastToken: E2EL and TPOT end at the last
// token-carrying event; the usage-only chunk (choices empty) that arrives
// well after it does not move the end.
func TestChatLatencyEndsAtLastToken(t *testing.T) {
	const usageLate = 600 * time.Millisecond
	url := pausedStream(t, []pausedEvent{
		{0, chatOK[0]}, {20 * time.Millisecond, chatOK[1]}, {40 * time.Millisecond, chatOK[2]},
		{usageLate, chatOK[3]},
	})
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
			r := newTestRequester(t, rqTarget(pausedStream(t, events)), rqProbe("chat"), Options{})
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
