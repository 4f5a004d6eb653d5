package client

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"sync"
	"testing"

	"github.com/vllm-prober/vllm-prober/config"
	"github.com/vllm-prober/vllm-prober/probe"
)

// capture records the requests a test server received.
type capture struct {
	mu      sync.Mutex
	bodies  []map[string]any
	headers []http.Header
	paths   []string
}

func (c *capture) record(r *http.Request) {
	var body map[string]any
	_ = json.NewDecoder(r.Body).Decode(&body)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.bodies = append(c.bodies, body)
	c.headers = append(c.headers, r.Header.Clone())
	c.paths = append(c.paths, r.URL.Path)
}

func TestRequesterRequestShape(t *testing.T) {
	tests := []struct {
		name     string
		api      string
		path     string
		wantKeys map[string]any
	}{
		{name: "chat", api: config.APIChat, path: "/v1/chat/completions", wantKeys: map[string]any{
			"max_completion_tokens": 16.0, "messages": []any{map[string]any{"role": "user", "content": "What is 12*12?"}},
		}},
		{name: "completions", api: config.APICompletions, path: "/v1/completions", wantKeys: map[string]any{
			"max_tokens": 16.0, "prompt": "What is 12*12?",
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var c capture
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				c.record(r)
				writeEvents(w, chatOK, true)
			}))
			defer srv.Close()
			p := rqProbe(tc.api)
			p.Request.IgnoreEOS = true
			p.Request.Extra = map[string]any{"top_k": 5, "stream": false, "temperature": 0.5}
			r := newTestRequester(t, rqTarget(srv.URL+"/"), p, Options{UserAgent: "test-agent/1"})
			res := doRequest(context.Background(), r, 42)
			if !regexp.MustCompile(`^t-p-42-[0-9a-f]{8}$`).MatchString(res.RequestID) {
				t.Fatalf("request id %q", res.RequestID)
			}
			if c.paths[0] != tc.path {
				t.Fatalf("path %q, want %q", c.paths[0], tc.path)
			}
			h := c.headers[0]
			if h.Get("X-Request-Id") != res.RequestID || h.Get("User-Agent") != "test-agent/1" || h.Get("Content-Type") != "application/json" {
				t.Fatalf("headers %v", h)
			}
			want := map[string]any{
				"model": "m", "stream": true, "ignore_eos": true, "temperature": 0.5, "top_k": 5.0,
				"stream_options": map[string]any{"include_usage": true, "continuous_usage_stats": true},
			}
			for k, v := range tc.wantKeys {
				want[k] = v
			}
			if fmt.Sprint(c.bodies[0]) != fmt.Sprint(want) {
				t.Fatalf("body\n got %v\nwant %v", c.bodies[0], want)
			}
		})
	}
}

func TestNewRequesterErrors(t *testing.T) {
	dataset := filepath.Join(t.TempDir(), "prompts.jsonl")
	if err := os.WriteFile(dataset, []byte("{\"prompt\": \"x\"}\nnot json\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		edit func(p *config.Probe)
		want string
	}{
		{name: "bad dataset", edit: func(p *config.Probe) {
			p.Workload = config.Workload{File: dataset}
		}, want: `probe "p" workload: .*prompts.jsonl:2: invalid JSON`},
		{name: "missing schema", edit: func(p *config.Probe) { p.Quality.JSONSchema = "/nonexistent/schema.json" },
			want: `probe "p": compile json schema /nonexistent/schema.json: `},
		{name: "no workload", edit: func(p *config.Probe) { p.Workload = config.Workload{} }, want: `probe "p" workload: probe has no workload`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := rqProbe(config.APIChat)
			tc.edit(&p)
			_, err := New(rqTarget("http://127.0.0.1:1"), p, Options{})
			if err == nil || !regexp.MustCompile(tc.want).MatchString(err.Error()) {
				t.Fatalf("err = %v, want match %q", err, tc.want)
			}
		})
	}
}

func TestRequesterKeepAlive(t *testing.T) {
	var mu sync.Mutex
	conns := map[string]bool{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		conns[r.RemoteAddr] = true
		mu.Unlock()
		_, _ = io.Copy(io.Discard, r.Body)
		writeEvents(w, chatOK, true)
	}))
	defer srv.Close()
	r := newTestRequester(t, rqTarget(srv.URL), rqProbe(config.APIChat), Options{})
	for i := range 5 {
		if res := doRequest(context.Background(), r, uint64(i)); res.Disposition != probe.Accepted {
			t.Fatalf("request %d: %s/%s %s", i, res.Disposition, res.Reason, res.Error)
		}
	}
	if len(conns) != 1 {
		t.Fatalf("%d connections for 5 sequential requests, want 1 (keep-alive)", len(conns))
	}
}
