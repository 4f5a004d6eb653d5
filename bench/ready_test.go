package bench

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/vllm-prober/vllm-prober/probe"
	"github.com/vllm-prober/vllm-prober/simulator"
)

// TestBenchReadyCheck checks that the ready check is vLLM's: skipped with
// --ready-check-timeout-sec 0 (no request the run does not announce),
// one initial test request otherwise.
func TestBenchReadyCheck(t *testing.T) {
	tests := []struct {
		name     string
		timeout  time.Duration
		requests int
		says     string
	}{
		{"skipped by default", 0, 5, "Starting initial single prompt test run...\nSkipping endpoint ready check.\nStarting main benchmark run...\n"},
		{"one test request", 5 * time.Second, 6, "Waiting for endpoint to become up in 5 seconds\nInitial test run completed.\nStarting main benchmark run...\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			url, sim := startSim(t, func(o *simulator.Options) { o.Trace = true })
			o := benchTestOptions(url)
			o.NumPrompts, o.ReadyCheckTimeout = 5, tt.timeout
			var stdout bytes.Buffer
			if _, err := Bench(context.Background(), o, Env{Stdout: &stdout}); err != nil {
				t.Fatal(err)
			}
			completions := 0
			for _, r := range sim.Trace() {
				if r.Path == o.Endpoint {
					completions++
				}
			}
			if completions != tt.requests {
				t.Errorf("the server saw %d completions, want %d", completions, tt.requests)
			}
			if !strings.Contains(stdout.String(), tt.says) {
				t.Errorf("output lacks %q:\n%s", tt.says, stdout.String())
			}
		})
	}
}

// TestBenchRefusedFirstRequest checks that a 4xx answer to the initial
// test request (a prompt over the model's context) is named as a refusal
// with the server's message, at once, while a server that answers 503 is
// not called "not ready".
func TestBenchRefusedFirstRequest(t *testing.T) {
	url, _ := startSim(t, func(o *simulator.Options) { o.MaxModelLen = 64 })
	unavailable := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/models" {
			fmt.Fprint(w, `{"object":"list","data":[{"id":"m","object":"model"}]}`)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprint(w, `{"error":{"message":"engine is loading","type":"ServiceUnavailable","code":503}}`)
	}))
	t.Cleanup(unavailable.Close)
	tests := []struct {
		name, url       string
		ready           time.Duration
		want            []string
		notWant         string
		within          time.Duration
		runFailsWithMsg bool
	}{
		{name: "refused at once", url: url, ready: 30 * time.Second, within: 5 * time.Second,
			want: []string{"refused the initial test request", "http 400: BadRequestError: This model's maximum context length is 64 tokens"}, notWant: "not ready"},
		{name: "answered 503 until the deadline", url: unavailable.URL, ready: 2 * time.Second, within: 10 * time.Second,
			want: []string{"initial test request to " + unavailable.URL + " failed", "http 503: ServiceUnavailable: engine is loading"}, notWant: "not ready"},
		{name: "no ready check: every request fails with the message", url: url, runFailsWithMsg: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := benchTestOptions(tt.url)
			o.RandomInputLen, o.NumPrompts, o.ReadyCheckTimeout = 100, 3, tt.ready
			var stdout bytes.Buffer
			start := time.Now()
			out, err := Bench(context.Background(), o, Env{Stdout: &stdout})
			if tt.runFailsWithMsg {
				if err != nil || out.Metrics.Reasons[probe.ReasonHTTP4xx] != 3 ||
					!strings.Contains(stdout.String(), "http 400: BadRequestError: This model's maximum context length") {
					t.Errorf("err %v, reasons %v, output:\n%s", err, out.Metrics.Reasons, stdout.String())
				}
				return
			}
			if err == nil || ExitCode(err) != 1 {
				t.Fatalf("err = %v, want a failure (exit 1)", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("err %q lacks %q", err, w)
				}
			}
			if strings.Contains(err.Error(), tt.notWant) {
				t.Errorf("err %q says %q of a server that answered", err, tt.notWant)
			}
			if d := time.Since(start); d > tt.within {
				t.Errorf("took %v, want under %v", d, tt.within)
			}
		})
	}
}
