// Package naive is the naive Go client the perf harness measures the
// prober against: net/http, time.Sleep until each planned send, a
// bufio.Scanner over the SSE body and a time.Now stamp right after each
// line is read. It is what anyone writes in an afternoon; its error is the
// floor a careful client must reach (the accuracy part), and its CPU the
// cost of sending the requests at all (the cost part).
package naive

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/vllm-prober/vllm-prober/bench/openloop"
	"github.com/vllm-prober/vllm-prober/probe"
)

// Client is the naive client. Its connection pool is sized as the prober's
// (prometheus/common's transport keeps 1,000 idle connections per host) so
// the comparison is about timing, not about dialling, and its request asks
// for the daemon's stream_options (usage in every event) so the server does
// the same work for both.
type Client struct {
	client *http.Client
	url    string
	body   string
}

// New prepares the naive client's completions request: a prompt of
// inputTokens words, outputTokens tokens with ignore_eos, streamed with
// continuous usage as the daemon asks; every request ends within timeout.
func New(base, model string, inputTokens, outputTokens int, timeout time.Duration) (*Client, error) {
	body, err := json.Marshal(map[string]any{"model": model, "prompt": strings.Repeat("hello ", inputTokens),
		"max_tokens": outputTokens, "ignore_eos": true, "stream": true,
		"stream_options": map[string]bool{"include_usage": true, "continuous_usage_stats": true}})
	if err != nil {
		return nil, fmt.Errorf("naive client request body: %w", err)
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConns, tr.MaxIdleConnsPerHost = 20000, 1000
	return &Client{client: &http.Client{Transport: tr, Timeout: timeout}, url: strings.TrimRight(base, "/") + "/v1/completions", body: string(body)}, nil
}

// Run sends one request at each planned offset from now and returns every
// request's Result once all have ended. Request i has X-Request-Id
// floor-<id>-<i> so the server's trace can be matched.
func (c *Client) Run(ctx context.Context, id string, offsets []time.Duration) []*probe.Result {
	defer c.client.CloseIdleConnections()
	results := make([]*probe.Result, 0, len(offsets))
	var wg sync.WaitGroup
	start := time.Now()
	for i, off := range offsets {
		planned := start.Add(off)
		time.Sleep(time.Until(planned))
		if ctx.Err() != nil {
			break
		}
		res := &probe.Result{Seq: uint64(i + 1), RequestID: fmt.Sprintf("floor-%s-%d", id, i), Scheduled: planned}
		results = append(results, res)
		wg.Go(func() { c.do(ctx, res) })
	}
	wg.Wait()
	return results
}

// do sends one request and records its send time, TTFT and ITLs in res;
// it is accepted when the stream ends with [DONE].
func (c *Client) do(ctx context.Context, res *probe.Result) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, strings.NewReader(c.body))
	if err != nil {
		res.Disposition, res.Error = probe.ServerFailure, err.Error()
		return
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Request-Id", res.RequestID)
	res.Sent = time.Now()
	res.Lag = res.Sent.Sub(res.Scheduled)
	resp, err := c.client.Do(req)
	if err != nil {
		res.Disposition, res.Error = probe.ServerFailure, err.Error()
		return
	}
	defer resp.Body.Close()
	res.HTTPStatus = resp.StatusCode
	if resp.StatusCode != http.StatusOK {
		res.Disposition, res.Error = probe.ServerFailure, resp.Status
		return
	}
	Read(resp.Body, time.Now, res)
}

// Read reads an SSE completions stream line by line, stamping each
// line with now() as soon as it is read: an event whose choice carries
// text is a token event (its stamp is TTFT's end or an ITL's). res is
// accepted when the stream ends with data: [DONE].
func Read(body io.Reader, now func() time.Time, res *probe.Result) {
	sc := bufio.NewScanner(body)
	var last time.Time
	for sc.Scan() {
		at := now()
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		if data == "[DONE]" {
			res.Disposition = probe.Accepted
			return
		}
		var chunk struct {
			Choices []struct {
				Text string `json:"text"`
			} `json:"choices"`
		}
		if err := json.Unmarshal([]byte(data), &chunk); err != nil {
			res.Disposition, res.Error = probe.ServerFailure, fmt.Sprintf("event %d: %v", res.Chunks+1, err)
			return
		}
		if len(chunk.Choices) == 0 || chunk.Choices[0].Text == "" {
			continue
		}
		if res.Chunks == 0 {
			res.TTFT = at.Sub(res.Sent)
		} else {
			res.ITLs = append(res.ITLs, at.Sub(last))
		}
		last = at
		res.Chunks++
	}
	res.Disposition, res.Error = probe.ServerFailure, "stream ended without [DONE]"
	if err := sc.Err(); err != nil {
		res.Error = err.Error()
	}
}

// Offsets is the Poisson schedule the naive client and bench send over d
// at rate: vLLM's, as bench/openloop draws it.
func Offsets(rate float64, d time.Duration) []time.Duration {
	return openloop.Schedule(max(int(rate*d.Seconds()), 1), rate, 1, 1)
}

// Ready is the line Serve logs once it is about to send.
var Ready = regexp.MustCompile(`naive client ready url=(\S+)`)

// Serve is the naive client of the cost part, a process of its own: it
// sends requests to the simulator at url at a Poisson rate, each a streamed
// completion of outputTokens tokens with a 128-word prompt, until ctx ends,
// after logging Ready's line to stderr.
func Serve(ctx context.Context, url string, rate float64, outputTokens int) error {
	f, err := New(url, "sim-llama", 128, outputTokens, 10*time.Second)
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "naive client ready url=%s\n", url)
	f.Run(ctx, "cost", Offsets(rate, time.Hour))
	return nil
}
