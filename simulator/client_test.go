package simulator

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

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
