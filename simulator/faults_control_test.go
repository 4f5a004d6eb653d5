package simulator

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/vllm-prober/vllm-prober/internal/daemontest"
	"github.com/vllm-prober/vllm-prober/simulator/wire"
)

// TestFaultStall shows a stream that stops mid-way for longer than the
// client waits, and that the server lets go once the client leaves.
func TestFaultStall(t *testing.T) {
	o := fastOptions()
	o.Faults = Faults{Stall: 1, StallDuration: 30 * time.Second}
	s, url := startTest(t, o)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	r := streamRequest(ctx, t, url+"/v1/chat/completions", streamChat)
	if r.status != 200 || len(r.contentTimes()) == 0 || r.done() || r.readErr == nil {
		t.Fatalf("want some content then a client timeout, got status %d, err %v, events %v", r.status, r.readErr, r.events)
	}
	daemontest.Poll(t, 2*time.Second, 5*time.Millisecond, "the stalled handler to let go after the client left",
		func() bool { return len(s.Trace()) > 0 })
	if rec := s.Trace()[0]; len(rec.Faults) != 1 || rec.Faults[0] != "stall" {
		t.Errorf("trace faults %v, want [stall]", rec.Faults)
	}
}

// TestFaultsEndpoint covers GET and POST /sim/faults.
func TestFaultsEndpoint(t *testing.T) {
	s, url := startTest(t, fastOptions())
	cases := []struct {
		name, body string
		status     int
		want       Faults
	}{
		{"set", `{"http_500":0.25,"stall":1,"stall_duration":"2s","extra_itl":0.05}`, 200,
			Faults{HTTP500: 0.25, Stall: 1, StallDuration: 2 * time.Second, ExtraITL: 50 * time.Millisecond}},
		{"tool call and drift keys", `{"bad_tool_call":0.5,"output_variant":2}`, 200, Faults{BadToolCall: 0.5, OutputVariant: 2}},
		{"replace clears absent keys", `{"bad_answer":1}`, 200, Faults{BadAnswer: 1}},
		{"negative output variant", `{"output_variant":-1}`, 400, Faults{BadAnswer: 1}},
		{"bad tool call rate above 1", `{"bad_tool_call":1.5}`, 400, Faults{BadAnswer: 1}},
		{"unknown key", `{"http_501":1}`, 400, Faults{BadAnswer: 1}},
		{"rate above 1", `{"http_500":2}`, 400, Faults{BadAnswer: 1}},
		{"bad duration", `{"extra_ttft":"soon"}`, 400, Faults{BadAnswer: 1}},
		{"not json", `{`, 400, Faults{BadAnswer: 1}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := post(t, url+"/sim/faults", tc.body)
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.status, body)
			}
			if got := s.Faults(); got != tc.want {
				t.Errorf("faults %+v, want %+v", got, tc.want)
			}
			get, err := http.Get(url + "/sim/faults")
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(get.Body)
			get.Body.Close()
			var round Faults
			decodeJSON(t, b, &round)
			if round != tc.want {
				t.Errorf("GET returned %s", b)
			}
		})
	}
}

// TestFaultsDeterministic checks that a seed fixes which requests fail.
func TestFaultsDeterministic(t *testing.T) {
	run := func() string {
		o := fastOptions()
		o.Faults = Faults{HTTP500: 0.5}
		_, url := startTest(t, o)
		var b strings.Builder
		for range 12 {
			resp, _ := post(t, url+"/v1/completions", `{"prompt":"hi","max_tokens":1}`)
			b.WriteString(resp.Status[:1])
		}
		return b.String()
	}
	a, b := run(), run()
	if a != b || !strings.Contains(a, "5") || !strings.Contains(a, "2") {
		t.Errorf("fault sequences %s and %s: want equal and mixed", a, b)
	}
}

// TestFaultsNonStreaming shows the faults that apply to JSON responses.
func TestFaultsNonStreaming(t *testing.T) {
	s, url := startTest(t, fastOptions())
	body := `{"prompt":"What is 12*12?","max_tokens":8}`
	cases := []struct {
		name   string
		faults Faults
		check  func(t *testing.T, r streamResult)
	}{
		{"error_event gives a 500", Faults{ErrorEvent: 1}, wantErrorBody(500, `{"error":{"message":"Internal server error","type":"InternalServerError","param":null,"code":500}}`)},
		{"malformed body", Faults{MalformedEvent: 1}, func(t *testing.T, r streamResult) {
			if r.status != 200 || strings.HasSuffix(r.body, "}") {
				t.Errorf("want a truncated 200 body, got %d %s", r.status, r.body)
			}
		}},
		{"disconnect", Faults{Disconnect: 1}, func(t *testing.T, r streamResult) {
			if r.readErr == nil {
				t.Errorf("want a transport error, got status %d", r.status)
			}
		}},
		{"bad answer", Faults{BadAnswer: 1}, func(t *testing.T, r streamResult) {
			if !strings.Contains(r.body, `"text":"295."`) {
				t.Errorf("want the wrong answer, got %s", r.body)
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s.SetFaults(tc.faults)
			tc.check(t, streamRequest(context.Background(), t, url+"/v1/completions", body))
		})
	}
}

// TestOutputVariant checks output drift: POST /sim/faults output_variant
// changes the text of every prompt for later requests, keeps arithmetic
// answers right, and variant 0 gives the original text back.
func TestOutputVariant(t *testing.T) {
	_, url := startTest(t, fastOptions())
	prompts := []string{"Tell me a story", "Describe the sea", "hello", "What is 12*12?", "List three colours"}
	texts := func() []string {
		var out []string
		for _, p := range prompts {
			_, b := post(t, url+"/v1/completions", fmt.Sprintf(`{"prompt":%q,"max_tokens":12}`, p))
			var r wire.CmplResponse
			decodeJSON(t, b, &r)
			out = append(out, r.Choices[0].Text)
		}
		return out
	}
	setVariant := func(v int) {
		if resp, b := post(t, url+"/sim/faults", fmt.Sprintf(`{"output_variant":%d}`, v)); resp.StatusCode != 200 {
			t.Fatalf("set variant %d: %d %s", v, resp.StatusCode, b)
		}
	}
	original := texts()
	if original[3] != "144." {
		t.Fatalf("variant 0 answer %q, want 144.", original[3])
	}
	seen := map[string]int{}
	for _, v := range []int{1, 2, 9} {
		setVariant(v)
		got := texts()
		for i := range prompts {
			if got[i] == original[i] {
				t.Errorf("variant %d: %q still answers %q", v, prompts[i], got[i])
			}
			if prev, ok := seen[got[i]]; ok && i != 3 {
				t.Errorf("variant %d: %q answers %q as variant %d did", v, prompts[i], got[i], prev)
			}
			seen[got[i]] = v
		}
		if !strings.HasSuffix(got[3], " 144.") {
			t.Errorf("variant %d: arithmetic answer %q lost its number", v, got[3])
		}
	}
	setVariant(0)
	if got := texts(); strings.Join(got, "|") != strings.Join(original, "|") {
		t.Errorf("variant 0 again gives %q, want %q", got, original)
	}
}
