package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math"
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
	var stdout bytes.Buffer
	_, err := Bench(context.Background(), o, Env{Stdout: &stdout})
	if err == nil || !strings.Contains(err.Error(), "not ready") || ExitCode(err) != 1 {
		t.Fatalf("err = %v (exit %d), want one 'not ready' error, exit 1", err, ExitCode(err))
	}
	if stdout.Len() != 0 || strings.Count(err.Error(), "\n") > 0 {
		t.Errorf("want one message and no per-request output, got %q and %q", err, stdout.String())
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
	url, _ := startSim(t, simtest.Reasoning(6))
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
