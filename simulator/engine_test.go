package simulator

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vllm-prober/vllm-prober/internal/promtext"
	"github.com/vllm-prober/vllm-prober/simulator/textgen"
	"github.com/vllm-prober/vllm-prober/simulator/wire"
)

// TestTrace checks the ground-truth record of a streamed request.
func TestTrace(t *testing.T) {
	s, url := startTest(t, fastOptions())
	r := streamRequest(context.Background(), t, url+"/v1/chat/completions", streamChat, "X-Request-Id", "probe-42")
	if !r.done() {
		t.Fatalf("stream not done: %v", r.events)
	}
	recs := s.Trace()
	if len(recs) != 1 {
		t.Fatalf("%d records, want 1", len(recs))
	}
	rec := recs[0]
	if rec.RequestID != "probe-42" || rec.ID != "chatcmpl-probe-42" || rec.Status != 200 || !rec.Stream || rec.Path != "/v1/chat/completions" {
		t.Errorf("record %+v", rec)
	}
	kinds, tokens := []string{}, 0
	for i, ev := range rec.Events {
		kinds = append(kinds, ev.Kind)
		tokens += ev.Tokens
		if i > 0 && ev.Time.Before(rec.Events[i-1].Time) {
			t.Errorf("event %d written before event %d", i, i-1)
		}
		if ev.Offset <= 0 || ev.Offset != ev.Time.Sub(rec.Arrival).Seconds() {
			t.Errorf("event %d offset %g", i, ev.Offset)
		}
	}
	want := "role,content,content,finish,usage,done"
	if strings.Join(kinds, ",") != want || tokens != rec.CompletionTokens || tokens != 3 {
		t.Errorf("events %s (tokens %d, completion %d), want %s with 3 tokens", strings.Join(kinds, ","), tokens, rec.CompletionTokens, want)
	}
	if rec.Events[0].Time != rec.Events[1].Time {
		t.Error("the role chunk must be flushed together with the first content chunk")
	}
	resp, body := get(t, url+"/sim/trace?request_id=nope")
	if resp.StatusCode != 200 || string(body) != "[]" {
		t.Errorf("filtered trace: %d %s", resp.StatusCode, body)
	}
	req, _ := http.NewRequest(http.MethodDelete, url+"/sim/trace", nil)
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 204 || len(s.Trace()) != 0 {
		t.Errorf("DELETE /sim/trace: %v %v, %d left", resp, err, len(s.Trace()))
	}
}

// TestStreamInterval checks that events carry stream_interval tokens.
func TestStreamInterval(t *testing.T) {
	cases := []struct {
		interval, maxTokens int
		want                []int // completion_tokens per event
	}{
		{1, 3, []int{1, 2, 3}},
		{3, 7, []int{1, 4, 7}},
		{4, 7, []int{1, 5, 7}},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("interval %d", tc.interval), func(t *testing.T) {
			o := fastOptions()
			o.StreamInterval = tc.interval
			_, url := startTest(t, o)
			body := fmt.Sprintf(`{"prompt":"x","max_tokens":%d,"ignore_eos":true,"stream":true,"stream_options":{"include_usage":true,"continuous_usage_stats":true}}`, tc.maxTokens)
			r := streamRequest(context.Background(), t, url+"/v1/completions", body)
			var got []int
			for _, e := range r.events {
				var c wire.CmplChunk
				if e == "[DONE]" {
					continue
				}
				decodeJSON(t, []byte(e), &c)
				if len(c.Choices) > 0 {
					got = append(got, c.Usage.CompletionTokens)
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("completion tokens per event %v, want %v", got, tc.want)
			}
		})
	}
}

// TestPreemption overflows a small KV cache: sequences are preempted and
// recomputed, and every request still gets its full output.
func TestPreemption(t *testing.T) {
	o := fastOptions()
	o.MaxModelLen, o.KVCacheTokens = 64, 64
	o.PrefillBase, o.DecodeBase = 0, 200*time.Microsecond
	_, url := startTest(t, o)
	var wg sync.WaitGroup
	for i := range 3 {
		wg.Go(func() {
			body := fmt.Sprintf(`{"prompt":[%d,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19],"max_tokens":30,"ignore_eos":true}`, i)
			_, b := post(t, url+"/v1/completions", body)
			var r wire.CmplResponse
			decodeJSON(t, b, &r)
			if r.Usage.CompletionTokens != 30 || count(r.Choices[0].Text) != 30 {
				t.Errorf("request %d: usage %+v text %q", i, r.Usage, r.Choices[0].Text)
			}
		})
	}
	wg.Wait()
	mfs := promtext.Scrape(t, url+"/metrics")
	if n := mfs["vllm:num_preemptions_total"].Metric[0].GetCounter().GetValue(); n == 0 {
		t.Error("no preemption counted")
	}
	if n := mfs["vllm:kv_cache_usage_perc"].Metric[0].GetGauge().GetValue(); n != 0 {
		t.Errorf("kv cache usage %g after all requests finished, want 0", n)
	}
}

func count(text string) int { return len(textgen.Split(text)) }

// TestSimpleEndpoints covers /health, /ping, /version, /load and /v1/models.
func TestSimpleEndpoints(t *testing.T) {
	_, url := startTest(t, fastOptions())
	cases := []struct {
		path, body string
	}{
		{"/health", ""},
		{"/ping", ""},
		{"/version", `{"version":"0.26.0"}`},
		{"/load", `{"server_load":0}`},
	}
	for _, tc := range cases {
		t.Run(tc.path, func(t *testing.T) {
			resp, b := get(t, url+tc.path)
			if resp.StatusCode != 200 || string(b) != tc.body {
				t.Errorf("%d %q, want 200 %q", resp.StatusCode, b, tc.body)
			}
		})
	}
	t.Run("/v1/models", func(t *testing.T) {
		_, b := get(t, url+"/v1/models")
		var m struct {
			Object string `json:"object"`
			Data   []struct {
				ID          string `json:"id"`
				OwnedBy     string `json:"owned_by"`
				MaxModelLen int    `json:"max_model_len"`
			} `json:"data"`
		}
		decodeJSON(t, b, &m)
		if m.Object != "list" || len(m.Data) != 1 || m.Data[0].ID != "sim-llama" || m.Data[0].MaxModelLen != 8192 || m.Data[0].OwnedBy != "vllm" {
			t.Errorf("models %s", b)
		}
	})
}

// TestKeepAlive: the server closes a keep-alive connection that stays idle
// for the keep-alive timeout, as vLLM's uvicorn does, and keeps it open
// when the timeout is 0; a negative timeout is refused.
func TestKeepAlive(t *testing.T) {
	// idleFor sends one request on a new connection, then waits up to
	// wait for the server to close it: how long that took, or false when
	// the connection was still open.
	idleFor := func(t *testing.T, keepAlive, wait time.Duration) (time.Duration, bool) {
		o := fastOptions()
		o.KeepAlive = keepAlive
		s, url, err := Serve(o, "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		conn, err := net.Dial("tcp", strings.TrimPrefix(url, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		if _, err := io.WriteString(conn, "GET /health HTTP/1.1\r\nHost: sim\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		br := bufio.NewReader(conn)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		idle := time.Now()
		if err := conn.SetReadDeadline(idle.Add(wait)); err != nil {
			t.Fatal(err)
		}
		_, err = br.ReadByte()
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return 0, false
		}
		if !errors.Is(err, io.EOF) {
			t.Fatalf("reading the idle connection: %v, want EOF or a timeout", err)
		}
		return time.Since(idle), true
	}
	t.Run("closes", func(t *testing.T) {
		const keepAlive = 100 * time.Millisecond
		took, closed := idleFor(t, keepAlive, 10*time.Second)
		if !closed || took < keepAlive {
			t.Errorf("idle connection closed=%v after %s, want closed after at least %s", closed, took, keepAlive)
		}
	})
	t.Run("zero keeps it open", func(t *testing.T) {
		if took, closed := idleFor(t, 0, 300*time.Millisecond); closed {
			t.Errorf("idle connection closed after %s with keep-alive timeout 0", took)
		}
	})
	t.Run("default is vLLM's", func(t *testing.T) {
		if got := DefaultOptions().KeepAlive; got != 5*time.Second {
			t.Errorf("default keep-alive %s, want vLLM's 5s", got)
		}
	})
	t.Run("negative", func(t *testing.T) {
		o := fastOptions()
		o.KeepAlive = -time.Second
		if _, err := New(o); err == nil || !strings.Contains(err.Error(), "keep-alive timeout -1s") {
			t.Errorf("New with a negative keep-alive: %v, want an error naming it", err)
		}
	})
}

func get(t testing.TB, url string) (*http.Response, []byte) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b strings.Builder
	buf := make([]byte, 4096)
	for {
		n, err := resp.Body.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			break
		}
	}
	return resp, []byte(b.String())
}

// TestQueueing shows that with a bounded batch later requests wait: their
// TTFT includes the queue time, which the per-request metrics and the
// server's queue-time histogram both see.
func TestQueueing(t *testing.T) {
	cases := []struct {
		name         string
		maxNumSeqs   int
		minLastQueue time.Duration // the longest queue time must reach this
	}{
		{"max-num-seqs 2 queues", 2, 50 * time.Millisecond},
		// That eight slots admit all eight at once is checked on the
		// engine's own clock (engine.TestAdmission): here the queue times
		// are wall-clock and grow on a loaded machine.
		{"max-num-seqs 8", 8, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o := fastOptions()
			o.MaxNumSeqs = tc.maxNumSeqs
			o.PrefillBase, o.DecodeBase = 5*time.Millisecond, 5*time.Millisecond
			_, url := startTest(t, o)
			queues, ttfts := runConcurrent(t, url, 8)
			for i := range queues {
				if ttfts[i] < queues[i] {
					t.Errorf("request %d: client TTFT %s shorter than its queue time %s", i, ttfts[i], queues[i])
				}
			}
			sorted := slices.Clone(queues)
			slices.Sort(sorted)
			longest := sorted[len(sorted)-1]
			if longest < tc.minLastQueue {
				t.Errorf("longest queue time %s, want at least %s (all: %v)", longest, tc.minLastQueue, sorted)
			}
			h := promtext.Scrape(t, url+"/metrics")["vllm:request_queue_time_seconds"].Metric[0].GetHistogram()
			var sum time.Duration
			for _, q := range queues {
				sum += q
			}
			if h.GetSampleCount() != 8 {
				t.Errorf("queue histogram count %d, want 8", h.GetSampleCount())
			}
			if got := time.Duration(h.GetSampleSum() * float64(time.Second)); got-sum > time.Millisecond || sum-got > time.Millisecond {
				t.Errorf("queue histogram sum %s, per-request sum %s", got, sum)
			}
		})
	}
}

// runConcurrent sends n streaming requests at once and returns each one's
// server queue time (from the per-request metrics) and client TTFT.
func runConcurrent(t *testing.T, url string, n int) ([]time.Duration, []time.Duration) {
	t.Helper()
	queues := make([]time.Duration, n)
	ttfts := make([]time.Duration, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			body := fmt.Sprintf(`{"prompt":"request %d","max_tokens":5,"ignore_eos":true,"stream":true,"stream_options":{"include_usage":true}}`, i)
			r := streamRequest(context.Background(), t, url+"/v1/completions", body)
			if r.readErr != nil || !r.done() {
				t.Errorf("request %d: err %v, events %v", i, r.readErr, r.events)
				return
			}
			ttfts[i] = r.contentTimes()[0]
			var u struct {
				Metrics wire.PerRequestMetrics `json:"metrics"`
			}
			usage := r.events[len(r.events)-2]
			if err := json.NewDecoder(strings.NewReader(usage)).Decode(&u); err != nil || u.Metrics.QueueTimeMs == nil {
				t.Errorf("request %d: usage chunk without metrics: %s", i, usage)
				return
			}
			queues[i] = time.Duration(*u.Metrics.QueueTimeMs * float64(time.Millisecond))
		})
	}
	wg.Wait()
	return queues, ttfts
}

// BenchmarkEventTiming measures how closely the simulator's event write
// times (taken after each flush) follow its configured latency model with
// jitter off: the first content event against PrefillBase +
// PrefillPerToken*prompt tokens from arrival, every later gap against
// DecodeBase + DecodePerSeq. Requests run one at a time (idle server).
//
//	go test -run '^$' -bench EventTiming -benchtime 100x ./simulator/
func BenchmarkEventTiming(b *testing.B) {
	o := DefaultOptions()
	o.Jitter, o.PrefixCaching, o.Trace = 0, false, true
	s, url := startTest(b, o)
	const promptTokens, outputTokens = 100, 16
	wantTTFT := o.PrefillBase + promptTokens*o.PrefillPerToken
	wantITL := o.DecodeBase + o.DecodePerSeq
	ids := strings.TrimSuffix(strings.Repeat("7,", promptTokens), ",")
	body := fmt.Sprintf(`{"prompt":[%s],"max_tokens":%d,"ignore_eos":true,"stream":true}`, ids, outputTokens)
	b.ResetTimer()
	for range b.N {
		r := streamRequest(context.Background(), b, url+"/v1/completions", body)
		if !r.done() {
			b.Fatalf("stream not done: %v", r.readErr)
		}
	}
	b.StopTimer()
	var ttftErr, itlErr []float64
	for _, rec := range s.Trace() {
		var prev time.Time
		for _, ev := range rec.Events {
			if ev.Tokens == 0 {
				continue
			}
			if prev.IsZero() {
				ttftErr = append(ttftErr, float64(ev.Time.Sub(rec.Arrival)-wantTTFT)/float64(time.Microsecond))
			} else {
				itlErr = append(itlErr, float64(ev.Time.Sub(prev)-wantITL)/float64(time.Microsecond))
			}
			prev = ev.Time
		}
	}
	report(b, "ttft", ttftErr)
	report(b, "itl", itlErr)
}

// report adds the mean signed error and p50, p99 and max of the absolute
// error, in microseconds.
func report(b *testing.B, name string, errs []float64) {
	abs := make([]float64, len(errs))
	sum := 0.0
	for i, e := range errs {
		abs[i] = math.Abs(e)
		sum += e
	}
	slices.Sort(abs)
	if len(abs) == 0 {
		return
	}
	q := func(p float64) float64 { return abs[min(len(abs)-1, int(math.Ceil(p*float64(len(abs))))-1)] }
	b.ReportMetric(sum/float64(len(errs)), name+"_mean_err_us")
	b.ReportMetric(q(0.50), name+"_p50_abs_err_us")
	b.ReportMetric(q(0.99), name+"_p99_abs_err_us")
	b.ReportMetric(abs[len(abs)-1], name+"_max_abs_err_us")
}
