package simulator

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vllm-prober/vllm-prober/internal/promtext"
	"github.com/vllm-prober/vllm-prober/simulator/wire"
)

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
