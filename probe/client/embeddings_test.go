package client

import (
	"context"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"

	"github.com/vllm-prober/vllm-prober/config"
	"github.com/vllm-prober/vllm-prober/probe"
)

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
