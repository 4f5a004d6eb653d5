package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vllm-prober/vllm-prober/bench/openloop"
	"github.com/vllm-prober/vllm-prober/bench/report"
	"github.com/vllm-prober/vllm-prober/bench/stats"
	"github.com/vllm-prober/vllm-prober/probe"
	"github.com/vllm-prober/vllm-prober/probe/ledger"
	"github.com/vllm-prober/vllm-prober/probe/ledger/ledgertest"
	"github.com/vllm-prober/vllm-prober/simulator"
	"github.com/vllm-prober/vllm-prober/simulator/simtest"
)

// startSim starts a fast simulator and returns its base URL.
func startSim(t *testing.T, mod func(*simulator.Options)) (string, *simulator.Server) {
	t.Helper()
	o := simulator.DefaultOptions()
	o.PrefillBase, o.PrefillPerToken, o.DecodeBase, o.DecodePerSeq = time.Millisecond, 0, time.Millisecond, 0
	sim, url := simtest.Start(t, o, mod)
	return url, sim
}

func benchTestOptions(url string) Options {
	return Options{BaseURL: url, Endpoint: "/v1/completions", Backend: backendOpenAI, DatasetName: datasetRandom,
		RandomInputLen: 16, RandomOutputLen: 4, NumPrompts: 40, RequestRate: 400, Burstiness: 1, Seed: 3,
		Goodput: stats.Goodput{TTFT: time.Second, HasTTFT: true}, MetricPercentiles: []float64{50, 99},
		PercentileMetrics: stats.RequestMetrics, Timeout: 10 * time.Second}
}

// blockValue returns the value printed after label in the result block.
func blockValue(t *testing.T, out, label string) string {
	t.Helper()
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, label) {
			return strings.TrimSpace(l[40:])
		}
	}
	t.Fatalf("line %q missing from:\n%s", label, out)
	return ""
}

func TestBenchAgainstSimulator(t *testing.T) {
	url, sim := startSim(t, nil)
	o := benchTestOptions(url)
	o.SaveResult, o.ResultDir = true, filepath.Join(t.TempDir(), "results", "new") // made when missing, like vLLM
	o.ReadyCheckTimeout = 10 * time.Second                                         // the initial test request retries past a fault
	var stdout bytes.Buffer
	sim.SetFaults(simulator.Faults{HTTP500: 0.15, ErrorEvent: 0.1})
	ctx := context.Background()
	out, err := Bench(ctx, o, Env{Stdout: &stdout, Now: time.Now, Logger: nil})
	if err != nil {
		t.Fatal(err)
	}
	recs := ledgertest.Read(t, out.Settings.LedgerPath)
	text := stdout.String()
	t.Run("every line of vLLM's block", func(t *testing.T) {
		for _, label := range []string{"============ Serving Benchmark Result ============", "Successful requests:",
			"Failed requests:", "Request rate configured (RPS):", "Benchmark duration (s):", "Total input tokens:",
			"Total generated tokens:", "Request throughput (req/s):", "Request goodput (req/s):",
			"Output token throughput (tok/s):", "Peak output token throughput (tok/s):", "Peak concurrent requests:",
			"Total token throughput (tok/s):", "---------------Time to First Token----------------", "Mean TTFT (ms):",
			"Median TTFT (ms):", "P99 TTFT (ms):", "P50 TTFT (ms):", "-----Time per Output Token (excl. 1st token)------",
			"Mean TPOT (ms):", "---------------Inter-token Latency----------------", "Mean ITL (ms):", "P99 ITL (ms):",
			"----------------End-to-end Latency----------------", "P99 E2EL (ms):", strings.Repeat("=", 50)} {
			if !strings.Contains(text, label) {
				t.Errorf("missing %q", label)
			}
		}
	})
	checkAgainstLedger(t, text, recs, out)
	checkSavedJSON(t, out)
}

// checkAgainstLedger recomputes the printed counts and sums from the
// ledger records.
func checkAgainstLedger(t *testing.T, text string, recs []ledger.Record, out *Outcome) {
	completedN, in, outTok, ttftSum := 0, 0, 0, 0.0
	disp := map[probe.Disposition]int{}
	for _, r := range recs {
		disp[r.Disposition]++
		switch r.Disposition {
		case probe.Accepted, probe.LatencyFailure, probe.QualityFailure:
			completedN++
			in += r.PromptTokens
			outTok += r.OutputTokens
			ttftSum += *r.TTFTS
		}
	}
	checks := []struct{ label, want string }{
		{"Successful requests:", strconv.Itoa(completedN)},
		{"Failed requests:", strconv.Itoa(len(recs) - completedN)},
		{"Total input tokens:", strconv.Itoa(in)},
		{"Total generated tokens:", strconv.Itoa(outTok)},
		{"Mean TTFT (ms):", fmt.Sprintf("%.2f", ttftSum/float64(max(completedN, 1))*1000)},
		{"Offered requests:", strconv.Itoa(len(recs))},
		{"accepted:", strconv.Itoa(disp[probe.Accepted])},
		{"server_failure:", strconv.Itoa(disp[probe.ServerFailure])},
		{"unfinished:", strconv.Itoa(disp[probe.Unfinished])},
	}
	for _, c := range checks {
		t.Run("ledger "+c.label, func(t *testing.T) {
			if got := blockValue(t, text, c.label); got != c.want {
				t.Errorf("%s printed %s, ledger says %s", c.label, got, c.want)
			}
		})
	}
	t.Run("offered equals the sum of dispositions", func(t *testing.T) {
		sum := 0
		for _, n := range out.Metrics.Dispositions {
			sum += n
		}
		if out.Metrics.Dispositions[probe.ServerFailure] == 0 || out.Metrics.Dispositions[probe.Accepted] == 0 {
			t.Errorf("dispositions %v: the faults should give both failures and accepted requests", out.Metrics.Dispositions)
		}
		if len(recs) != out.Metrics.Offered || sum != out.Metrics.Offered || out.Metrics.Offered != 40 {
			t.Errorf("ledger %d, offered %d, sum of dispositions %d, want 40", len(recs), out.Metrics.Offered, sum)
		}
	})
}

func checkSavedJSON(t *testing.T, out *Outcome) {
	b, err := os.ReadFile(out.ResultPath)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	// The saved result is report.Marshal's without --save-detailed (its
	// vLLM keys are checked in bench/report), with the prober's keys.
	b, err = report.Marshal(out.Settings, out.Metrics, out.Run, false, out.Run.Start, nil)
	if err != nil {
		t.Fatal(err)
	}
	var want map[string]any
	if err := json.Unmarshal(b, &want); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"mean_e2el_ms", "p50_ttft_ms", "offered", "dispositions", "acceptance_ratio", "goodput", "ledger"} {
		if _, ok := want[k]; !ok {
			t.Errorf("report.Marshal lacks the prober's key %q", k)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(want)) {
		t.Run("json "+k, func(t *testing.T) {
			if _, ok := got[k]; !ok {
				t.Errorf("saved result lacks key %q", k)
			}
		})
	}
	if len(got) != len(want) {
		t.Errorf("saved result has %d keys, report.Marshal without --save-detailed %d", len(got), len(want))
	}
	if filepath.Dir(out.Settings.LedgerPath) != filepath.Dir(out.ResultPath) {
		t.Errorf("ledger %s not beside the result %s", out.Settings.LedgerPath, out.ResultPath)
	}
}

func TestBenchServerDown(t *testing.T) {
	srv := httptest.NewServer(nil)
	url := srv.URL
	srv.Close()
	o := benchTestOptions(url)
	var stdout, logs bytes.Buffer
	_, err := Bench(context.Background(), o, Env{Stdout: &stdout, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err == nil || !strings.Contains(err.Error(), "not ready") || ExitCode(err) != 1 {
		t.Fatalf("err = %v (exit %d), want one 'not ready' error, exit 1", err, ExitCode(err))
	}
	if stdout.Len() != 0 || strings.Count(err.Error(), "\n") > 0 {
		t.Errorf("want one message and no per-request output, got %q and %q", err, stdout.String())
	}
	// The error is the one message: no log line says it first.
	if logs.Len() != 0 {
		t.Errorf("want no log line beside the error, got %q", logs.String())
	}
}

func TestExecuteUnfinished(t *testing.T) {
	url, _ := startSim(t, func(o *simulator.Options) { o.Faults.ExtraTTFT = 3 * time.Second })
	o := benchTestOptions(url)
	o.Model = "sim-llama"
	c, err := newRequester(&o, nil, Env{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	tests := []struct {
		name    string
		conc    int
		offered int
	}{{"sent and cut", 0, 3}, {"waiting for a slot", 1, 3}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
			defer cancel()
			run := openloop.Execute(ctx, openloop.Options{Offsets: []time.Duration{0, 0, 0, time.Hour}, Sender: c, MaxConcurrency: tt.conc})
			m := stats.Compute(run, stats.Options{Percentiles: []float64{99}})
			if m.Offered != tt.offered || m.Dispositions[probe.Unfinished] != tt.offered {
				t.Errorf("offered %d, dispositions %v: want %d offered, all unfinished (%s)", m.Offered, m.Dispositions, tt.offered, run.Results[0].Error)
			}
			if math.IsNaN(m.Acceptance) || m.Acceptance != 0 {
				t.Errorf("acceptance %v, want 0", m.Acceptance)
			}
		})
	}
}

func TestBenchChatAgainstSimulator(t *testing.T) {
	url, _ := startSim(t, nil)
	o := benchTestOptions(url)
	o.Backend, o.Endpoint, o.NumPrompts, o.MaxConcurrency, o.NumWarmups = backendOpenAIChat, "/v1/chat/completions", 8, 2, 2
	var stdout bytes.Buffer
	out, err := Bench(context.Background(), o, Env{Stdout: &stdout})
	if err != nil {
		t.Fatal(err)
	}
	m := out.Metrics
	if m.Dispositions[probe.Accepted] != 8 || m.TotalOutput != 8*4 {
		t.Errorf("dispositions %v, output tokens %d: want 8 accepted chat requests of 4 tokens", m.Dispositions, m.TotalOutput)
	}
	for _, r := range out.Run.Results {
		inFlight := 0
		for _, o := range out.Run.Results {
			if !o.Sent.After(r.Sent) && o.Sent.Add(o.E2EL).After(r.Sent) {
				inFlight++
			}
		}
		if inFlight > 2 {
			t.Errorf("%d requests in flight when request %d was sent, want at most --max-concurrency 2", inFlight, r.Seq)
		}
	}
	for _, want := range []string{"Maximum request concurrency:             2", "Maximum request concurrency: 2\n"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("output lacks %q", want)
		}
	}
	if strings.Contains(stdout.String(), "TTFA") {
		t.Errorf("a TTFA section without reasoning:\n%s", stdout.String())
	}
}

// TestBenchReasoningAgainstSimulator: against a reasoning model the result
// block gets the TTFA section, whose median is the TTFT median plus the
// reasoning deltas' time.
func TestBenchReasoningAgainstSimulator(t *testing.T) {
	// Decode steps of 10 ms: with startSim's 1 ms, a simulator handler that
	// waited for a CPU (a loaded machine, the race detector) wrote its
	// queued reasoning and answer events together, the client read them in
	// one read and stamped both alike, and TTFA equalled TTFT.
	url, _ := startSim(t, func(o *simulator.Options) {
		simtest.Reasoning(6)(o)
		o.DecodeBase = 10 * time.Millisecond
	})
	o := benchTestOptions(url)
	o.Backend, o.Endpoint, o.NumPrompts, o.RandomOutputLen = backendOpenAIChat, "/v1/chat/completions", 8, 12
	var stdout bytes.Buffer
	out, err := Bench(context.Background(), o, Env{Stdout: &stdout})
	if err != nil {
		t.Fatal(err)
	}
	m := out.Metrics
	if !m.Reasoned || m.Dispositions[probe.Accepted] != 8 {
		t.Fatalf("reasoned %v, dispositions %v: want 8 accepted requests that reasoned", m.Reasoned, m.Dispositions)
	}
	ttft, ttfa := m.Dists[stats.MetricTTFT].Median, m.Dists[stats.MetricTTFA].Median
	if !(ttfa > ttft) {
		t.Errorf("median TTFA %.2f ms, TTFT %.2f ms: want the answer after the reasoning", ttfa, ttft)
	}
	if got := blockValue(t, stdout.String(), "Median TTFA (ms):"); got != fmt.Sprintf("%.2f", ttfa) {
		t.Errorf("printed median TTFA %s, computed %.2f", got, ttfa)
	}
	if !strings.Contains(stdout.String(), "------------Time to First Answer Token------------") {
		t.Errorf("output lacks the TTFA section:\n%s", stdout.String())
	}
}

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

// TestBenchRequesterReceiveTimes: bench on the real clock (Env.Now nil)
// stamps responses with their receive times as the daemon does; on a
// clock of its own, it reads that clock.
func TestBenchRequesterReceiveTimes(t *testing.T) {
	for _, c := range []struct {
		name string
		env  Env
		want bool
	}{{"real clock", Env{}, true}, {"own clock", Env{Now: time.Now}, false}} {
		t.Run(c.name, func(t *testing.T) {
			env := c.env
			env.defaults()
			env.defaults() // twice, as nested commands do
			o := benchTestOptions("http://127.0.0.1:1")
			r, err := newRequester(&o, nil, env)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			if got := r.ReceiveTimes(); got != c.want {
				t.Errorf("ReceiveTimes = %v, want %v", got, c.want)
			}
		})
	}
}
