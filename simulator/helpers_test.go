package simulator

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/vllm-prober/vllm-prober/internal/daemontest"
)

// fastOptions is a deterministic, quick latency model for tests.
func fastOptions() Options {
	o := DefaultOptions()
	o.Seed = 1
	o.PrefillBase = 2 * time.Millisecond
	o.PrefillPerToken = 0
	o.DecodeBase = time.Millisecond
	o.DecodePerSeq = 0
	o.Jitter = 0
	o.Trace = true
	return o
}

// startTest runs a simulator behind an httptest server.
func startTest(t testing.TB, o Options) (*Server, string) {
	t.Helper()
	s, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(func() {
		s.Close() // ends open streams first, so ts.Close does not wait on them
		ts.Close()
	})
	return s, ts.URL
}

// post sends a JSON body and returns the response with its whole body.
func post(t testing.TB, url, body string, header ...string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	return daemontest.Send(t, http.DefaultClient, req)
}

// events splits an SSE body into its data payloads; it fails on any line
// that is not vLLM's `data: ` framing.
func events(t testing.TB, body []byte) []string {
	t.Helper()
	if !bytes.HasSuffix(body, []byte("\n\n")) {
		t.Fatalf("body does not end with a blank line: %q", body)
	}
	var out []string
	for _, ev := range strings.Split(strings.TrimSuffix(string(body), "\n\n"), "\n\n") {
		data, ok := strings.CutPrefix(ev, "data: ")
		if !ok || strings.Contains(data, "\n") {
			t.Fatalf("event is not a single data line: %q", ev)
		}
		out = append(out, data)
	}
	return out
}

var normalisers = []struct {
	re   *regexp.Regexp
	repl string
}{
	{regexp.MustCompile(`"id":"(chatcmpl|cmpl)-[^"]*"`), `"id":"$1-ID"`},
	{regexp.MustCompile(`"created":\d+`), `"created":0`},
	{regexp.MustCompile(`"system_fingerprint":"vllm-[^"]*"`), `"system_fingerprint":"FP"`},
	{regexp.MustCompile(`"(time_to_first_token_ms|queue_time_ms|generation_time_ms|mean_itl_ms|tokens_per_second)":[0-9.e+-]+`), `"$1":0`},
}

// normalise replaces ids, timestamps and timings so outputs compare exactly.
func normalise(s string) string {
	for _, n := range normalisers {
		s = n.re.ReplaceAllString(s, n.repl)
	}
	return s
}

// keyOrder lists every object key of a JSON document as a dotted path, in
// document order (array elements share their array's path).
func keyOrder(t testing.TB, doc string) []string {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(doc))
	var out []string
	if err := walkKeys(dec, "", &out); err != nil {
		t.Fatalf("parse %s: %v", doc, err)
	}
	return out
}

func walkKeys(dec *json.Decoder, prefix string, out *[]string) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	d, ok := tok.(json.Delim)
	if !ok {
		return nil
	}
	for dec.More() {
		p := prefix
		if d == '{' {
			k, err := dec.Token()
			if err != nil {
				return err
			}
			p = prefix + k.(string)
			*out = append(*out, p)
			p += "."
		}
		if err := walkKeys(dec, p, out); err != nil {
			return err
		}
	}
	_, err = dec.Token()
	return err
}

func decodeJSON(t testing.TB, b []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("decode %s: %v", b, err)
	}
}

// streamResult is what a streaming client saw.
type streamResult struct {
	status  int
	header  http.Header
	headers time.Duration // time to response headers
	events  []string      // data payloads
	times   []time.Duration
	readErr error
	body    string // the whole body of non-SSE responses
}

// streamRequest sends body and reads SSE events with their arrival times
// until the body ends, ctx ends or a read fails.
func streamRequest(ctx context.Context, t testing.TB, url, body string, header ...string) streamResult {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	start := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return streamResult{readErr: err}
	}
	defer resp.Body.Close()
	res := streamResult{status: resp.StatusCode, header: resp.Header, headers: time.Since(start)}
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		b, err := io.ReadAll(resp.Body)
		res.body, res.readErr = string(b), err
		return res
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if data, ok := strings.CutPrefix(line, "data: "); ok {
			res.events = append(res.events, data)
			res.times = append(res.times, time.Since(start))
		}
	}
	res.readErr = sc.Err()
	return res
}

// contentTimes returns the arrival times of events that carry text.
func (r streamResult) contentTimes() []time.Duration {
	var out []time.Duration
	for i, e := range r.events {
		if strings.Contains(e, `"content":"`) && !strings.Contains(e, `"content":""`) || strings.Contains(e, `"text":"`) && !strings.Contains(e, `"text":""`) {
			out = append(out, r.times[i])
		}
	}
	return out
}

func (r streamResult) done() bool {
	return len(r.events) > 0 && r.events[len(r.events)-1] == "[DONE]"
}
