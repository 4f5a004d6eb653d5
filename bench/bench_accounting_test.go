package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vllm-prober/vllm-prober/bench/stats"
	"github.com/vllm-prober/vllm-prober/probe"
	"github.com/vllm-prober/vllm-prober/probe/ledger/ledgertest"
	"github.com/vllm-prober/vllm-prober/simulator"
)

// ledgerBlock returns the Prober Ledger block of a bench's output.
func ledgerBlock(t *testing.T, out string) string {
	t.Helper()
	_, block, ok := strings.Cut(out, " Prober Ledger ")
	if !ok {
		t.Fatalf("no Prober Ledger block in:\n%s", out)
	}
	return block
}

// TestBenchOverloadAndStalls checks the ledger block against a hand count
// from the ledger file when the server is overloaded (two sequences at 200
// req/s), stalls streams past the timeout and answers some requests 500.
func TestBenchOverloadAndStalls(t *testing.T) {
	url, sim := startSim(t, func(o *simulator.Options) {
		o.MaxNumSeqs = 2
		o.PrefillBase, o.DecodeBase = 2*time.Millisecond, 2*time.Millisecond
	})
	o := benchTestOptions(url)
	o.NumPrompts, o.RequestRate, o.Timeout, o.MetricPercentiles = 60, 200, 400*time.Millisecond, []float64{50, 100}
	o.ReadyCheckTimeout = 10 * time.Second
	o.LedgerPath = filepath.Join(t.TempDir(), "ledger.jsonl")
	sim.SetFaults(simulator.Faults{Stall: 0.2, StallDuration: 5 * time.Second, HTTP500: 0.1})
	var stdout bytes.Buffer
	out, err := Bench(context.Background(), o, Env{Stdout: &stdout})
	if err != nil {
		t.Fatal(err)
	}
	recs := ledgertest.Read(t, o.LedgerPath)
	var first, lastEnd time.Time
	completedN, accepted, timeouts := 0, 0, 0
	for _, r := range recs {
		if (&probe.Result{Disposition: r.Disposition, Reason: r.Reason}).ServerCompleted() {
			completedN++
		}
		accepted += map[bool]int{true: 1}[r.Disposition == probe.Accepted]
		if r.Sent == nil {
			continue
		}
		if first.IsZero() || r.Sent.Before(first) {
			first = *r.Sent
		}
		var end time.Time
		switch {
		case r.Disposition == probe.ClientTimeout:
			// The timeout runs from the call to send, which comes after
			// the planned time and, on a loaded machine, well before the
			// bytes go out: it ends no earlier than planned + timeout.
			timeouts++
			end = r.Scheduled.Add(o.Timeout)
		case r.E2ELS != nil:
			end = r.Sent.Add(time.Duration(*r.E2ELS * float64(time.Second)))
		}
		if end.After(lastEnd) {
			lastEnd = end
		}
	}
	m := out.Metrics
	if timeouts == 0 || m.Dispositions[probe.ServerFailure] == 0 {
		t.Fatalf("dispositions %v: want stalls timing out and 500 answers", m.Dispositions)
	}
	block := ledgerBlock(t, stdout.String())
	t.Run("completed counts answered failures", func(t *testing.T) {
		if got := blockValue(t, block, "Completed requests:"); got != strconv.Itoa(completedN) || completedN <= m.Completed {
			t.Errorf("printed %s completed, ledger says %d (vLLM's successful %d)", got, completedN, m.Completed)
		}
	})
	t.Run("wall clock from first send to last answer", func(t *testing.T) {
		if lower := lastEnd.Sub(first); m.Window < lower || m.Window > m.Duration {
			t.Errorf("window %v, want between the ledger's %v and the run's %v", m.Window, lower, m.Duration)
		}
		want := fmt.Sprintf("%.2f", float64(completedN)/m.Window.Seconds())
		if got := blockValue(t, block, "Completed throughput (req/s):"); got != want {
			t.Errorf("completed throughput %s, want %d / %v = %s", got, completedN, m.Window, want)
		}
		want = fmt.Sprintf("%.2f", float64(accepted)/m.Window.Seconds())
		if got := blockValue(t, block, "Goodput (accepted req/s):"); got != want {
			t.Errorf("goodput %s, want %s", got, want)
		}
	})
	t.Run("timeouts counted at the timeout", func(t *testing.T) {
		// A stream can finish a little after the timeout on a starved
		// machine, so the largest E2EL is the timeout or a later finish.
		maxDone := 0.0
		for _, r := range recs {
			if r.E2ELS != nil && (&probe.Result{Disposition: r.Disposition}).ServerCompleted() {
				maxDone = max(maxDone, *r.E2ELS*1000)
			}
		}
		want := fmt.Sprintf("%.2f", max(float64(o.Timeout)/float64(time.Millisecond), maxDone))
		if got := blockValue(t, block, "P100 E2EL (ms):"); got != want {
			t.Errorf("censored max E2EL %s, want %s: the 400ms timeout or a later finish (%.2f)", got, want, maxDone)
		}
		if got := m.Dists[stats.MetricE2EL].Percentiles[1].MS; math.Abs(got-maxDone) > 0.01 {
			t.Errorf("vLLM's max E2EL %v, want the completed requests' %v: its block keeps completed requests only", got, maxDone)
		}
	})
	if got := blockValue(t, block, "Acceptance ratio:"); got != fmt.Sprintf("%.4f", float64(accepted)/float64(len(recs))) {
		t.Errorf("acceptance %s, want %d/%d", got, accepted, len(recs))
	}
}

// TestBenchGoodputZero runs --goodput ttft:0 against the simulator: no
// request is good and none is accepted.
func TestBenchGoodputZero(t *testing.T) {
	url, _ := startSim(t, nil)
	o := benchTestOptions(url)
	g, err := parseGoodput([]string{"ttft:0"})
	if err != nil {
		t.Fatal(err)
	}
	o.Goodput, o.NumPrompts = g, 10
	var stdout bytes.Buffer
	out, err := Bench(context.Background(), o, Env{Stdout: &stdout})
	if err != nil {
		t.Fatal(err)
	}
	m := out.Metrics
	if got := blockValue(t, stdout.String(), "Request goodput (req/s):"); got != "0.00" || m.Completed != 10 {
		t.Errorf("vLLM's request goodput %s over %d completed, want 0.00", got, m.Completed)
	}
	if m.Dispositions[probe.Accepted] != 0 || m.Dispositions[probe.LatencyFailure] != 10 || m.Goodput != 0 {
		t.Errorf("dispositions %v goodput %v, want every request a latency failure", m.Dispositions, m.Goodput)
	}
}

// TestBenchInterruptedOfferedLoad interrupts a 2 s run after 400 ms: the
// offered load is the requests offered over the time offering lasted, not
// over the planned span.
func TestBenchInterruptedOfferedLoad(t *testing.T) {
	url, _ := startSim(t, nil)
	o := benchTestOptions(url)
	o.NumPrompts, o.RequestRate, o.Burstiness = 100, 50, math.Inf(1) // one request every 20 ms, span 2 s
	ctx, cancel := context.WithTimeout(context.Background(), 400*time.Millisecond)
	defer cancel()
	var stdout bytes.Buffer
	out, err := Bench(ctx, o, Env{Stdout: &stdout})
	if err != nil {
		t.Fatal(err)
	}
	m, run := out.Metrics, out.Run
	if !run.Interrupted || m.Offered >= 100 || m.Offered < 5 {
		t.Fatalf("interrupted %v with %d offered, want an interrupted run", run.Interrupted, m.Offered)
	}
	elapsed := run.Stopped.Sub(run.Start).Seconds()
	if want := float64(m.Offered) / elapsed; math.Abs(m.OfferedRate-want) > 1e-9 || m.OfferedRate < 25 || m.OfferedRate > 75 {
		t.Errorf("offered load %v req/s, want %d offered / %.3fs = %v, near the 50 req/s asked", m.OfferedRate, m.Offered, elapsed, want)
	}
	if got := blockValue(t, ledgerBlock(t, stdout.String()), "Offered load (req/s):"); got != fmt.Sprintf("%.2f", m.OfferedRate) {
		t.Errorf("printed offered load %s, want %.2f", got, m.OfferedRate)
	}
}

// TestBenchClientQueueTime runs with --max-concurrency 1 against a slow
// server: requests wait for the slot, and the saved result holds vLLM's
// queue_times and latencies, and the client queue metrics when
// --percentile-metrics names them, computed over the completed requests.
func TestBenchClientQueueTime(t *testing.T) {
	url, _ := startSim(t, func(o *simulator.Options) { o.DecodeBase = 5 * time.Millisecond })
	o := benchTestOptions(url)
	o.NumPrompts, o.MaxConcurrency, o.SaveResult, o.ResultDir = 8, 1, true, t.TempDir()
	o.PercentileMetrics = []string{stats.MetricTTFT, stats.MetricClientQueue, stats.MetricE2ELAndQueue}
	var stdout bytes.Buffer
	out, err := Bench(context.Background(), o, Env{Stdout: &stdout})
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(out.ResultPath)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Latencies  []float64 `json:"latencies"`
		QueueTimes []float64 `json:"queue_times"`
		MeanQueue  *float64  `json:"mean_client_queue_time_ms"`
		MeanWith   *float64  `json:"mean_e2el_including_client_queue_ms"`
		P99With    *float64  `json:"p99_e2el_including_client_queue_ms"`
		Errors     []string  `json:"errors"`
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Latencies) != 8 || len(got.QueueTimes) != 8 || got.Errors != nil {
		t.Fatalf("latencies %v queue_times %v errors %v: want 8 of each, errors only with --save-detailed", got.Latencies, got.QueueTimes, got.Errors)
	}
	queue, with := 0.0, 0.0
	for i := range got.Latencies {
		queue += got.QueueTimes[i] * 1000 / 8
		with += (got.Latencies[i] + got.QueueTimes[i]) * 1000 / 8
	}
	if got.MeanQueue == nil || got.MeanWith == nil || got.P99With == nil || queue <= 0 ||
		math.Abs(*got.MeanQueue-queue) > 1e-6 || math.Abs(*got.MeanWith-with) > 1e-6 {
		t.Errorf("mean queue %v ms, with queue %v ms; want %v and %v from the per-request lists", got.MeanQueue, got.MeanWith, queue, with)
	}
	for _, want := range []string{"---------------Client-side Queueing---------------", "Mean Client Queue Time (ms):",
		"-------Queue-inclusive End-to-end Latency--------", "P99 E2EL incl. Client Queue (ms):"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("output lacks %q", want)
		}
	}
}
