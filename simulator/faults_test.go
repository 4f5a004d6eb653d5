package simulator

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"time"
)

const streamChat = `{"messages":[{"role":"user","content":"What is 12*12?"}],"max_tokens":8,"stream":true,"stream_options":{"include_usage":true}}`

// TestFaults shows, per fault kind, what a streaming client receives.
func TestFaults(t *testing.T) {
	cases := []struct {
		name   string
		faults Faults
		check  func(t *testing.T, r streamResult)
	}{
		{"healthy", Faults{}, func(t *testing.T, r streamResult) {
			wantStatus(t, r, 200)
			if !r.done() || !strings.Contains(strings.Join(r.events, ""), `"content":"144"`) {
				t.Errorf("healthy stream: %v", r.events)
			}
		}},
		{"http_500", Faults{HTTP500: 1}, wantErrorBody(500, `{"error":{"message":"Internal server error","type":"InternalServerError","param":null,"code":500}}`)},
		{"http_503", Faults{HTTP503: 1}, wantErrorBody(503, `{"error":{"message":"Service Unavailable","type":"Service Unavailable","param":null,"code":503}}`)},
		{"http_429", Faults{HTTP429: 1}, func(t *testing.T, r streamResult) {
			wantErrorBody(429, `{"error":{"message":"Too Many Requests","type":"Too Many Requests","param":null,"code":429}}`)(t, r)
			if r.header.Get("Retry-After") == "" {
				t.Error("429 without Retry-After")
			}
		}},
		{"slow_headers", Faults{SlowHeaders: 1, SlowHeadersDelay: 150 * time.Millisecond}, func(t *testing.T, r streamResult) {
			wantStatus(t, r, 200)
			if r.headers < 150*time.Millisecond || !r.done() {
				t.Errorf("headers after %s (want >= 150ms), done %v", r.headers, r.done())
			}
		}},
		{"disconnect", Faults{Disconnect: 1}, func(t *testing.T, r streamResult) {
			wantStatus(t, r, 200)
			if !errors.Is(r.readErr, io.ErrUnexpectedEOF) || r.done() || len(r.contentTimes()) == 0 {
				t.Errorf("want some content then an unexpected EOF, got err %v, events %v", r.readErr, r.events)
			}
		}},
		{"error_event", Faults{ErrorEvent: 1}, func(t *testing.T, r streamResult) {
			wantStatus(t, r, 200)
			n := len(r.events)
			want := `{"error": {"message": "Internal server error", "type": "InternalServerError", "param": null, "code": 500}}`
			if n < 3 || r.events[n-2] != want || !r.done() || len(r.contentTimes()) == 0 {
				t.Errorf("want content, the error event and [DONE], got %v", r.events)
			}
		}},
		{"malformed_event", Faults{MalformedEvent: 1}, func(t *testing.T, r streamResult) {
			wantStatus(t, r, 200)
			bad := 0
			for _, e := range r.events {
				if e != "[DONE]" && !json.Valid([]byte(e)) {
					bad++
				}
			}
			if bad != 1 || !r.done() {
				t.Errorf("want exactly one malformed event and [DONE], got %d in %v", bad, r.events)
			}
		}},
		{"no_done", Faults{NoDone: 1}, func(t *testing.T, r streamResult) {
			wantStatus(t, r, 200)
			if r.readErr != nil || r.done() || !strings.Contains(r.events[len(r.events)-1], `"choices":[]`) {
				t.Errorf("want a clean end after the usage chunk without [DONE], got err %v, events %v", r.readErr, r.events)
			}
		}},
		{"wrong_model", Faults{WrongModel: 1}, func(t *testing.T, r streamResult) {
			for _, e := range r.events[:len(r.events)-1] {
				if !strings.Contains(e, `"model":"sim-llama-wrong"`) {
					t.Errorf("event with the served model: %s", e)
				}
			}
		}},
		{"bad_answer", Faults{BadAnswer: 1}, func(t *testing.T, r streamResult) {
			all := strings.Join(r.events, "")
			if strings.Contains(all, `"content":"144"`) || !strings.Contains(all, `"content":"295"`) || !r.done() {
				t.Errorf("want the wrong answer 295, got %v", r.events)
			}
		}},
		{"extra_ttft", Faults{ExtraTTFT: 120 * time.Millisecond}, func(t *testing.T, r streamResult) {
			if c := r.contentTimes(); len(c) == 0 || c[0] < 120*time.Millisecond {
				t.Errorf("first content at %v, want >= 120ms", c)
			}
		}},
		{"extra_itl", Faults{ExtraITL: 30 * time.Millisecond}, func(t *testing.T, r streamResult) {
			// Event k is due extra_itl*k after the unfaulted time, so the last
			// one cannot come before that however late the first one was.
			c := r.contentTimes()
			if len(c) < 3 {
				t.Fatalf("too few content events: %v", r.events)
			}
			if floor := time.Duration(len(c)-1) * 30 * time.Millisecond; c[len(c)-1] < floor {
				t.Errorf("last content event at %s, want >= %s", c[len(c)-1], floor)
			}
		}},
	}
	s, url := startTest(t, fastOptions())
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s.SetFaults(tc.faults)
			body := streamChat
			if tc.name == "extra_itl" { // needs several token-carrying events
				body = `{"messages":[{"role":"user","content":"Tell me"}],"max_tokens":5,"ignore_eos":true,"stream":true}`
			}
			tc.check(t, streamRequest(context.Background(), t, url+"/v1/chat/completions", body))
		})
	}
}

func wantStatus(t *testing.T, r streamResult, status int) {
	t.Helper()
	if r.status != status {
		t.Fatalf("status %d, want %d (err %v)", r.status, status, r.readErr)
	}
}

// wantErrorBody checks a JSON error answered before streaming.
func wantErrorBody(status int, body string) func(*testing.T, streamResult) {
	return func(t *testing.T, r streamResult) {
		t.Helper()
		wantStatus(t, r, status)
		if !strings.HasPrefix(r.header.Get("Content-Type"), "application/json") {
			t.Errorf("content type %q", r.header.Get("Content-Type"))
		}
		if r.body != body {
			t.Errorf("body %s, want %s", r.body, body)
		}
	}
}
