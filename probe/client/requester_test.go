package client

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	promconfig "github.com/prometheus/common/config"
	"github.com/prometheus/common/model"

	"github.com/vllm-prober/vllm-prober/config"
	"github.com/vllm-prober/vllm-prober/internal/testfile"
	"github.com/vllm-prober/vllm-prober/probe"
	"github.com/vllm-prober/vllm-prober/probe/fingerprint"
	"github.com/vllm-prober/vllm-prober/simulator"
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
			url := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				c.record(r)
				writeEvents(w, chatOK, true)
			}))
			p := rqProbe(tc.api)
			p.Request.IgnoreEOS = true
			p.Request.Extra = map[string]any{"top_k": 5, "stream": false, "temperature": 0.5}
			r := newTestRequester(t, rqTarget(url+"/"), p, Options{UserAgent: "test-agent/1"})
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

// TestRequesterPreparedSequence: a Requester that prepares each request
// ahead (Prepare, DoPrepared) sends the bodies one that does not sends, for
// the same random workload seed; it prepares nothing before a request has
// learnt the model.
func TestRequesterPreparedSequence(t *testing.T) {
	var plain, prepared capture
	p := rqProbe(config.APICompletions)
	p.Workload = config.Workload{Random: &config.RandomWorkload{InputTokens: 8, OutputTokens: 4, RangeRatio: 0.5, Seed: 7}}
	requester := func(c *capture) *Requester {
		url := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			c.record(r)
			writeEvents(w, chatOK, true)
		}))
		return newTestRequester(t, rqTarget(url), p, Options{})
	}
	a, b := requester(&plain), requester(&prepared)
	if b.Prepare(1) != nil {
		t.Fatal("prepared before any request learnt the model")
	}
	for seq := uint64(1); seq <= 6; seq++ {
		doRequest(context.Background(), a, seq)
		res := &probe.Result{Seq: seq, Target: "t", Probe: "p", Scheduled: time.Now()}
		pr := b.Prepare(seq)
		if seq > 1 && pr == nil {
			t.Fatalf("seq %d: not prepared after a request", seq)
		}
		b.DoPrepared(context.Background(), res, pr)
		if res.Disposition != probe.Accepted {
			t.Fatalf("seq %d: %s/%s %s", seq, res.Disposition, res.Reason, res.Error)
		}
	}
	if fmt.Sprint(prepared.bodies) != fmt.Sprint(plain.bodies) {
		t.Fatalf("prepared bodies\n%v\nwant\n%v", prepared.bodies, plain.bodies)
	}
}

func TestNewRequesterErrors(t *testing.T) {
	dataset := testfile.Temp(t, "prompts.jsonl", "{\"prompt\": \"x\"}\nnot json\n")
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
	url := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		conns[r.RemoteAddr] = true
		mu.Unlock()
		_, _ = io.Copy(io.Discard, r.Body)
		writeEvents(w, chatOK, true)
	}))
	r := newTestRequester(t, rqTarget(url), rqProbe(config.APIChat), Options{})
	for i := range 5 {
		if res := doRequest(context.Background(), r, uint64(i)); res.Disposition != probe.Accepted {
			t.Fatalf("request %d: %s/%s %s", i, res.Disposition, res.Reason, res.Error)
		}
	}
	if len(conns) != 1 {
		t.Fatalf("%d connections for 5 sequential requests, want 1 (keep-alive)", len(conns))
	}
}

// connServer is a chat server that records the connection (the remote
// address) of every request and counts the connections closed.
type connServer struct {
	*httptest.Server
	mu     sync.Mutex
	addrs  []string
	closed int
}

func startConnServer(t *testing.T) *connServer {
	c := &connServer{}
	c.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.mu.Lock()
		c.addrs = append(c.addrs, r.RemoteAddr)
		c.mu.Unlock()
		_, _ = io.Copy(io.Discard, r.Body)
		writeEvents(w, chatOK, true)
	}))
	c.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateClosed {
			c.mu.Lock()
			c.closed++
			c.mu.Unlock()
		}
	}
	c.Start()
	t.Cleanup(c.Close)
	return c
}

// requests returns how many requests the server has received.
func (c *connServer) requests() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.addrs)
}

// connsSince returns the distinct connections of the requests from the
// n-th on.
func (c *connServer) connsSince(n int) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	seen := map[string]bool{}
	for _, a := range c.addrs[n:] {
		seen[a] = true
	}
	return len(seen)
}

// waitClosed waits up to 5 s until want connections have been closed.
func (c *connServer) waitClosed(t *testing.T, want int) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		c.mu.Lock()
		got := c.closed
		c.mu.Unlock()
		if got == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d connections closed, want %d", got, want)
		}
	}
}

// sendAccepted sends request seq with r and fails the test unless it is
// accepted.
func sendAccepted(t *testing.T, r *Requester, seq uint64) {
	t.Helper()
	if res := doRequest(context.Background(), r, seq); res.Disposition != probe.Accepted {
		t.Fatalf("%s request %d: %s/%s %s", r.probe.Name, seq, res.Disposition, res.Reason, res.Error)
	}
}

// TestPoolSharesConnections: the probes of one target with a Pool send
// over one keep-alive connection (three without it); a target whose
// http_client_config differs gets its own client; the last Close of a
// shared client closes its idle connection, and the pool forgets it.
func TestPoolSharesConnections(t *testing.T) {
	srv := startConnServer(t)
	connsAfter := func(pool *Pool, tg config.Target) (int, []*Requester) {
		first := srv.requests()
		var rs []*Requester
		for i := range 3 {
			p := rqProbe(config.APIChat)
			p.Name = fmt.Sprintf("p%d", i)
			r, err := New(tg, p, Options{Clients: pool})
			if err != nil {
				t.Fatal(err)
			}
			rs = append(rs, r)
			for seq := range 2 {
				sendAccepted(t, r, uint64(seq))
			}
		}
		return srv.connsSince(first), rs
	}
	if n, rs := connsAfter(nil, rqTarget(srv.URL)); n != 3 {
		t.Errorf("without a pool: %d connections for 3 probes, want 3", n)
	} else {
		for _, r := range rs {
			r.Close()
		}
		srv.waitClosed(t, 3)
	}
	pool := new(Pool)
	n, rs := connsAfter(pool, rqTarget(srv.URL))
	if n != 1 {
		t.Errorf("with a pool: %d connections for 3 probes of one target, want 1", n)
	}
	other := rqTarget(srv.URL)
	other.HTTPClientConfig.HTTPHeaders = &promconfig.Headers{Headers: map[string]promconfig.Header{"X-Other": {Values: []string{"1"}}}}
	if o, err := New(other, rqProbe(config.APIChat), Options{Clients: pool}); err != nil {
		t.Fatal(err)
	} else {
		if o.client == rs[0].client {
			t.Error("a target with another http_client_config shares the first one's client")
		}
		o.Close()
	}
	before := 3
	rs[0].Close()
	rs[1].Close()
	time.Sleep(50 * time.Millisecond)
	srv.waitClosed(t, before) // still in use by rs[2]
	rs[2].Close()
	srv.waitClosed(t, before+1)
	pool.mu.Lock()
	defer pool.mu.Unlock()
	if len(pool.clients) != 0 {
		t.Errorf("pool keeps %d clients after every Requester closed", len(pool.clients))
	}
}

// TestPoolClosesIdleConnections: a connection idle for the pool's idle
// timeout is closed by the prober, so the next request dials a new one;
// a request within the timeout reuses it. The default timeout is below
// vLLM's keep-alive, so the prober, not the server, closes first.
func TestPoolClosesIdleConnections(t *testing.T) {
	if DefaultIdleTimeout >= simulator.DefaultKeepAlive {
		t.Errorf("default idle timeout %s, want below vLLM's keep-alive %s", DefaultIdleTimeout, simulator.DefaultKeepAlive)
	}
	srv := startConnServer(t)
	r, err := New(rqTarget(srv.URL), rqProbe(config.APIChat), Options{Clients: &Pool{IdleTimeout: 100 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	sendAccepted(t, r, 0)
	sendAccepted(t, r, 1) // at once: the same connection
	srv.waitClosed(t, 1)  // by the client, after 100 ms idle
	sendAccepted(t, r, 2)
	if srv.connsSince(0) != 2 || srv.connsSince(1) != 2 || srv.connsSince(2) != 1 {
		srv.mu.Lock()
		defer srv.mu.Unlock()
		t.Errorf("connections of requests 0, 1, 2: %v; want 0 and 1 on one, 2 on a new one after the idle close", srv.addrs)
	}
}

func TestRequesterModelDiscovery(t *testing.T) {
	var (
		mu          sync.Mutex
		modelsOK    bool
		modelsCalls int
		served      = "served-model"
		c           capture
	)
	url := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		switch r.URL.Path {
		case "/v1/models":
			modelsCalls++
			if !modelsOK {
				http.Error(w, "not ready", http.StatusServiceUnavailable)
				return
			}
			fmt.Fprintf(w, `{"object":"list","data":[{"id":%q,"object":"model"},{"id":"lora"}]}`, served)
		default:
			c.record(r)
			if c.bodies[len(c.bodies)-1]["model"] != served {
				http.Error(w, `{"error":{"message":"The model does not exist.","type":"NotFoundError","code":404}}`, http.StatusNotFound)
				return
			}
			events := slices.Clone(chatOK)
			for i := range events {
				events[i] = strings.ReplaceAll(events[i], `"m"`, fmt.Sprintf("%q", served))
			}
			writeEvents(w, events, true)
		}
	}))
	tg := rqTarget(url)
	tg.Model = ""
	r := newTestRequester(t, tg, rqProbe(config.APIChat), Options{})
	step := func(want probe.Disposition, reason string, wantCalls int) {
		t.Helper()
		res := doRequest(context.Background(), r, 1)
		mu.Lock()
		defer mu.Unlock()
		if res.Disposition != want || res.Reason != reason || modelsCalls != wantCalls {
			t.Fatalf("got %s/%s (%s) after %d /v1/models calls, want %s/%s after %d", res.Disposition, res.Reason, res.Error,
				modelsCalls, want, reason, wantCalls)
		}
	}
	step(probe.ServerFailure, probe.ReasonModelDiscovery, 1)
	step(probe.ServerFailure, probe.ReasonModelDiscovery, 2) // retried on the next request
	mu.Lock()
	modelsOK = true
	mu.Unlock()
	step(probe.Accepted, "", 3)
	step(probe.Accepted, "", 3) // cached
	mu.Lock()
	served = "new-model"
	mu.Unlock()
	step(probe.ServerFailure, probe.ReasonHTTP4xx, 3) // 404: forget the model
	step(probe.Accepted, "", 4)
}

// chatMulti streams "ab" as two tokens in one event, then "c" and "d".
var chatMulti = []string{
	`{"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":""}}],"usage":{"prompt_tokens":5,"completion_tokens":0}}`,
	`{"model":"m","choices":[{"index":0,"delta":{"content":"ab"}}],"usage":{"prompt_tokens":5,"completion_tokens":2}}`,
	`{"model":"m","choices":[{"index":0,"delta":{"content":"c"}}],"usage":{"prompt_tokens":5,"completion_tokens":3}}`,
	`{"model":"m","choices":[{"index":0,"delta":{"content":"d"},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":4}}`,
}

// chatTool answers with one tool call in two fragments: its id (random
// per request on a real server) and name, then its arguments.
var chatTool = []string{
	`{"model":"m","choices":[{"index":0,"delta":{"role":"assistant","tool_calls":[{"index":0,"id":"chatcmpl-tool-1","type":"function","function":{"name":"add","arguments":"{\"a\":"}}]}}],"usage":{"prompt_tokens":5,"completion_tokens":2}}`,
	`{"model":"m","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"2}"}}]},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":4}}`,
}

func hashOf(text string) string {
	h := fingerprint.NewHasher(1)
	h.Add(text, 1)
	return h.Sum()
}

// TestRequesterFingerprint: a fingerprint probe's completed request carries
// the hash of its answer's first tokens (counted by continuous usage) and
// its prompt's index, whatever the judge decides; a stream cut short and a
// probe without fingerprint carry none. A prompt's seed is sent as seed.
// TestRequesterTimeoutBeforeSend: a request that times out waiting for
// the model discovery (a target that accepts the connection and never
// answers) is a client_timeout that latency views still record, at the
// time it waited, so a stalled server does not empty the histograms.
func TestRequesterTimeoutBeforeSend(t *testing.T) {
	release := make(chan struct{})
	url := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	t.Cleanup(func() { close(release) })
	tg := rqTarget(url)
	tg.Model = ""
	p := rqProbe(config.APIChat)
	p.Timeout = model.Duration(300 * time.Millisecond)
	res := doRequest(context.Background(), newTestRequester(t, tg, p, Options{}), 1)
	if res.Disposition != probe.ClientTimeout || res.Reason != probe.ReasonTimeout || !res.Sent.IsZero() {
		t.Fatalf("got %s/%s sent %v (%s), want client_timeout/timeout before any send", res.Disposition, res.Reason, res.Sent, res.Error)
	}
	if res.Elapsed < 300*time.Millisecond {
		t.Errorf("elapsed %v, want at least the 300ms timeout", res.Elapsed)
	}
	for name, observed := range map[string]func() (time.Duration, bool){
		"ttft": res.ObservedTTFT, "ttfa": res.ObservedTTFA, "e2el": res.ObservedE2EL,
	} {
		if d, ok := observed(); !ok || d != res.Elapsed {
			t.Errorf("observed %s %v (%v), want the elapsed %v", name, d, ok, res.Elapsed)
		}
	}
}

func TestRequesterFingerprint(t *testing.T) {
	seed := int64(7)
	for _, tt := range []struct {
		name     string
		events   []string
		done     bool
		fp       *config.Fingerprint
		minOut   int
		wantText string // "" = no fingerprint
		wantDisp probe.Disposition
	}{
		{"first token", chatOK, true, &config.Fingerprint{Tokens: 1, Confirm: 3}, 1, "14", probe.Accepted},
		{"shorter answer", chatOK, true, &config.Fingerprint{Tokens: 16, Confirm: 3}, 1, "144", probe.Accepted},
		{"usage counts tokens", chatMulti, true, &config.Fingerprint{Tokens: 3, Confirm: 3}, 1, "abc", probe.Accepted},
		{"event reaching the count is whole", chatMulti, true, &config.Fingerprint{Tokens: 1, Confirm: 3}, 1, "ab", probe.Accepted},
		{"quality failure still fingerprinted", chatOK, true, &config.Fingerprint{Tokens: 2, Confirm: 3}, 5, "144", probe.QualityFailure},
		{"tool call name and arguments", chatTool, true, &config.Fingerprint{Tokens: 16, Confirm: 3}, 1, `add{"a":2}`, probe.Accepted},
		{"no done", chatOK, false, &config.Fingerprint{Tokens: 2, Confirm: 3}, 1, "", probe.ServerFailure},
		{"no fingerprint", chatOK, true, nil, 1, "", probe.Accepted},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var c capture
			url := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				c.record(r)
				writeEvents(w, tt.events, tt.done)
			}))
			p := rqProbe(config.APIChat)
			p.Fingerprint, p.Quality.MinOutputTokens = tt.fp, tt.minOut
			p.Workload.Prompts = append(p.Workload.Prompts, config.Prompt{Messages: []config.Message{{Role: "user", Content: "2+2?"}}, Seed: &seed})
			r := newTestRequester(t, rqTarget(url), p, Options{})
			for seq := uint64(1); seq <= 2; seq++ {
				res := doRequest(context.Background(), r, seq)
				if res.Disposition != tt.wantDisp {
					t.Fatalf("request %d: disposition %s (%s), want %s", seq, res.Disposition, res.Error, tt.wantDisp)
				}
				switch fp := res.Fingerprint; {
				case tt.wantText == "" && fp != nil:
					t.Errorf("request %d: fingerprint %+v, want none", seq, *fp)
				case tt.wantText == "":
				case fp == nil:
					t.Errorf("request %d: no fingerprint, want the hash of %q", seq, tt.wantText)
				case fp.Hash != hashOf(tt.wantText) || fp.Prompt != int(seq-1) || fp.Changed:
					t.Errorf("request %d: fingerprint %+v, want prompt %d, hash %s of %q", seq, *fp, seq-1, hashOf(tt.wantText), tt.wantText)
				}
			}
			if _, ok := c.bodies[0]["seed"]; ok {
				t.Errorf("prompt 0 has no seed, body sent %v", c.bodies[0]["seed"])
			}
			if got := c.bodies[1]["seed"]; got != float64(7) {
				t.Errorf("prompt 1 sent seed %v, want 7", got)
			}
		})
	}
}
