// Package report is what a bench run prints and saves, in vllm bench
// serve's form so the numbers compare line by line: vLLM's "Serving
// Benchmark Result" block, the prober's ledger block below it, the saved
// result's JSON and file name, and the writing of a report file whole
// (WriteFile), which every file bench, capacity and merge write goes
// through. It reads a run and its statistics; it knows nothing of how the
// requests were sent.
package report

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/vllm-prober/vllm-prober/bench/openloop"
	"github.com/vllm-prober/vllm-prober/bench/pyfmt"
	"github.com/vllm-prober/vllm-prober/bench/stats"
	"github.com/vllm-prober/vllm-prober/probe"
)

// Settings are the run parameters a report repeats.
type Settings struct {
	Backend           string
	Label             string
	Model             string
	NumPrompts        int
	RequestRate       float64
	Burstiness        float64
	MaxConcurrency    int // 0 = none
	Goodput           stats.Goodput
	PercentileMetrics []string
	Percentiles       []float64
	LedgerPath        string
}

// metricTitles are vLLM's section headers and short names per metric.
var metricTitles = map[string][2]string{
	stats.MetricTTFT:         {"Time to First Token", "TTFT"},
	stats.MetricTPOT:         {"Time per Output Token (excl. 1st token)", "TPOT"},
	stats.MetricITL:          {"Inter-token Latency", "ITL"},
	stats.MetricE2EL:         {"End-to-end Latency", "E2EL"},
	stats.MetricClientQueue:  {"Client-side Queueing", "Client Queue Time"},
	stats.MetricE2ELAndQueue: {"Queue-inclusive End-to-end Latency", "E2EL incl. Client Queue"},
	stats.MetricTTFA:         {"Time to First Answer Token", "TTFA"},
}

// reported lists the selected metrics vLLM reports, in its order: the
// queueing ones only with --max-concurrency, the queue-inclusive E2EL only
// at a finite rate.
func reported(s Settings) []string {
	var out []string
	for _, name := range stats.AllMetrics {
		switch {
		case !slices.Contains(s.PercentileMetrics, name):
		case (name == stats.MetricClientQueue || name == stats.MetricE2ELAndQueue) && s.MaxConcurrency <= 0:
		case name == stats.MetricE2ELAndQueue && math.IsInf(s.RequestRate, 1):
		default:
			out = append(out, name)
		}
	}
	return out
}

// printed lists the metrics the result block and the saved result report:
// vLLM's (reported), then TTFA when the server streamed reasoning.
func printed(s Settings, m stats.Metrics) []string {
	out := reported(s)
	if m.Reasoned {
		out = append(out, stats.MetricTTFA)
	}
	return out
}

// center centres s in a line of n fill characters, as Python's
// "{s:{c}^{n}}" does (the odd character goes right).
func center(s string, fill byte, n int) string {
	pad := n - len(s)
	if pad <= 0 {
		return s
	}
	return strings.Repeat(string(fill), pad/2) + s + strings.Repeat(string(fill), pad-pad/2)
}

// lineInt and lineFloat print vLLM's "{:<40} {:<10}" and
// "{:<40} {:<10.2f}" lines.
func lineInt(w io.Writer, label string, v int) {
	fmt.Fprintf(w, "%-40s %-10d\n", label, v)
}

func lineFloat(w io.Writer, label string, v float64) {
	fmt.Fprintf(w, "%-40s %-10s\n", label, pyfmt.Float(v, 2))
}

// PrintFailures prints up to 10 failed requests' errors, as vLLM does
// before its result block.
func PrintFailures(w io.Writer, run *openloop.Run) {
	var failed []*probe.Result
	for _, r := range run.Results {
		if !stats.Completed(r) {
			failed = append(failed, r)
		}
	}
	if len(failed) == 0 {
		return
	}
	fmt.Fprintln(w, "Failed requests during benchmark run detected (capping to 10):")
	for i, r := range failed[:min(10, len(failed))] {
		fmt.Fprintf(w, "Error %d: %s %s: %s\n", i, r.Disposition, r.Reason, r.Error)
	}
}

// PrintResult prints vLLM's "Serving Benchmark Result" block line for line.
func PrintResult(w io.Writer, s Settings, m stats.Metrics) {
	fmt.Fprintln(w, center(" Serving Benchmark Result ", '=', 50))
	lineInt(w, "Successful requests:", m.Completed)
	lineInt(w, "Failed requests:", m.Failed)
	if s.MaxConcurrency > 0 {
		lineInt(w, "Maximum request concurrency:", s.MaxConcurrency)
	}
	if !math.IsInf(s.RequestRate, 1) {
		lineFloat(w, "Request rate configured (RPS):", s.RequestRate)
	}
	lineFloat(w, "Benchmark duration (s):", m.Duration.Seconds())
	lineInt(w, "Total input tokens:", m.TotalInput)
	lineInt(w, "Total generated tokens:", m.TotalOutput)
	lineFloat(w, "Request throughput (req/s):", m.RequestThroughput)
	if s.Goodput.IsSet() {
		lineFloat(w, "Request goodput (req/s):", m.RequestGoodput)
	}
	lineFloat(w, "Output token throughput (tok/s):", m.OutputThroughput)
	lineFloat(w, "Peak output token throughput (tok/s):", m.MaxOutputTokensPerSecond)
	lineFloat(w, "Peak concurrent requests:", float64(m.MaxConcurrentRequests))
	lineFloat(w, "Total token throughput (tok/s):", m.TotalTokenThroughput)
	for _, name := range printed(s, m) {
		t, d := metricTitles[name], m.Dists[name]
		fmt.Fprintln(w, center(t[0], '-', 50))
		lineFloat(w, fmt.Sprintf("Mean %s (ms):", t[1]), d.Mean)
		lineFloat(w, fmt.Sprintf("Median %s (ms):", t[1]), d.Median)
		for _, p := range d.Percentiles {
			lineFloat(w, fmt.Sprintf("P%s %s (ms):", pyfmt.Percentile(p.P), t[1]), p.MS)
		}
	}
	fmt.Fprintln(w, strings.Repeat("=", 50))
}

// PrintLedger prints the prober's additions below vLLM's block: offered
// load, completed throughput and goodput over the wall-clock window,
// acceptance, the latencies with timeouts counted at the timeout, and the
// disposition mix that accounts for every offered request.
func PrintLedger(w io.Writer, s Settings, m stats.Metrics) {
	fmt.Fprintln(w, center(" Prober Ledger ", '=', 50))
	lineInt(w, "Offered requests:", m.Offered)
	if m.Abandoned > 0 {
		lineInt(w, "Abandoned by the prober:", m.Abandoned)
	}
	lineInt(w, "Sent requests:", m.Sent)
	lineInt(w, "Completed requests:", m.ServerCompleted)
	lineFloat(w, "Offered load (req/s):", m.OfferedRate)
	lineFloat(w, "Achieved send rate (req/s):", m.SendRate)
	lineFloat(w, "Wall-clock time (s):", m.Window.Seconds())
	lineFloat(w, "Completed throughput (req/s):", m.CompletedThroughput)
	lineFloat(w, "Goodput (accepted req/s):", m.Goodput)
	fmt.Fprintf(w, "%-40s %-10s\n", "Acceptance ratio:", pyfmt.Float(m.Acceptance, 4))
	printCensored(w, s, m)
	fmt.Fprintln(w, center("Dispositions", '-', 50))
	for _, d := range stats.AllDispositions {
		lineInt(w, string(d)+":", m.Dispositions[d])
	}
	if len(m.Reasons) > 0 {
		fmt.Fprintln(w, center("Failure reasons", '-', 50))
		for _, r := range sortedKeys(m.Reasons) {
			lineInt(w, r+":", m.Reasons[r])
		}
	}
	if s.LedgerPath != "" {
		fmt.Fprintf(w, "%-40s %s\n", "Ledger:", s.LedgerPath)
	}
	fmt.Fprintln(w, strings.Repeat("=", 50))
}

// printCensored prints the selected latencies of stats.Metrics.Latency: the
// median and the selected percentiles.
func printCensored(w io.Writer, s Settings, m stats.Metrics) {
	header := false
	for _, name := range []string{stats.MetricTTFT, stats.MetricTPOT, stats.MetricE2EL} {
		if !slices.Contains(s.PercentileMetrics, name) {
			continue
		}
		if !header {
			fmt.Fprintln(w, center("Latency, timeouts counted", '-', 50))
			header = true
		}
		t, d := metricTitles[name], m.Latency[name]
		lineFloat(w, fmt.Sprintf("Median %s (ms):", t[1]), d.Median)
		for _, p := range d.Percentiles {
			lineFloat(w, fmt.Sprintf("P%s %s (ms):", pyfmt.Percentile(p.P), t[1]), p.MS)
		}
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// Filename is vLLM's name for a saved result:
// {label or backend}-{rate}qps[-concurrency{N}]-{model basename}-{date}.json.
func Filename(s Settings, at time.Time) string {
	label := s.Label
	if label == "" {
		label = s.Backend
	}
	name := label + "-" + pyfmt.Rate(s.RequestRate) + "qps"
	if s.MaxConcurrency > 0 {
		name += fmt.Sprintf("-concurrency%d", s.MaxConcurrency)
	}
	return name + "-" + path.Base(s.Model) + "-" + at.Format("20060102-150405") + ".json"
}

// Marshal renders the saved JSON: vLLM's keys, then the prober's.
// extra adds keys of the sharded runs: a worker's "shard", a merge's "merge".
func Marshal(s Settings, m stats.Metrics, run *openloop.Run, detailed bool, at time.Time, extra map[string]any) ([]byte, error) {
	out := vllmKeys(s, m, at)
	for _, name := range printed(s, m) {
		d := m.Dists[name]
		out["mean_"+name+"_ms"], out["median_"+name+"_ms"], out["std_"+name+"_ms"] = d.Mean, d.Median, d.Std
		for _, p := range d.Percentiles {
			out["p"+pyfmt.Percentile(p.P)+"_"+name+"_ms"] = p.MS
		}
	}
	addPerRequest(out, run, detailed)
	disp := map[string]int{}
	for d, n := range m.Dispositions {
		disp[string(d)] = n
	}
	out["offered"], out["abandoned"], out["sent"] = m.Offered, m.Abandoned, m.Sent
	out["dispositions"], out["failure_reasons"] = disp, m.Reasons
	out["offered_rate"], out["send_rate"] = pyfmt.JSONFloat(m.OfferedRate), pyfmt.JSONFloat(m.SendRate)
	out["server_completed"], out["wall_clock_s"] = m.ServerCompleted, m.Window.Seconds()
	out["completed_throughput"], out["goodput"], out["acceptance_ratio"] = m.CompletedThroughput, m.Goodput, m.Acceptance
	out["latency_censored_ms"] = censoredJSON(m)
	out["ledger"] = s.LedgerPath
	maps.Copy(out, extra)
	b, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode result: %w", err)
	}
	return append(b, '\n'), nil
}

// censoredJSON renders stats.Metrics.Latency as {"ttft": {"mean": ..,
// "median": .., "p99": ..}, ...}.
func censoredJSON(m stats.Metrics) map[string]map[string]float64 {
	out := map[string]map[string]float64{}
	for name, d := range m.Latency {
		v := map[string]float64{"mean": d.Mean, "median": d.Median}
		for _, p := range d.Percentiles {
			v["p"+pyfmt.Percentile(p.P)] = p.MS
		}
		out[name] = v
	}
	return out
}

// vllmKeys returns vLLM's run settings, totals and throughputs.
func vllmKeys(s Settings, m stats.Metrics, at time.Time) map[string]any {
	var label, maxConc, goodput any
	if s.Label != "" {
		label = s.Label
	}
	if s.MaxConcurrency > 0 {
		maxConc = s.MaxConcurrency
	}
	if s.Goodput.IsSet() {
		goodput = m.RequestGoodput
	}
	return map[string]any{
		"date": at.Format("20060102-150405"), "endpoint_type": s.Backend, "backend": s.Backend,
		"label": label, "model_id": s.Model, "tokenizer_id": s.Model, "num_prompts": s.NumPrompts,
		"request_rate": pyfmt.JSONFloat(s.RequestRate), "burstiness": pyfmt.JSONFloat(s.Burstiness), "max_concurrency": maxConc,
		"duration": m.Duration.Seconds(), "completed": m.Completed, "failed": m.Failed,
		"total_input_tokens": m.TotalInput, "total_output_tokens": m.TotalOutput,
		"request_throughput": m.RequestThroughput, "request_goodput": goodput,
		"output_throughput": m.OutputThroughput, "total_token_throughput": m.TotalTokenThroughput,
		"max_output_tokens_per_s": m.MaxOutputTokensPerSecond, "max_concurrent_requests": m.MaxConcurrentRequests,
		"rtfx": 0.0,
	}
}

// addPerRequest adds vLLM's per-request lists: latencies and queue_times
// always, as vLLM keeps them; input_lens, output_lens, ttfts, itls,
// start_times (seconds from the start of the run), generated_texts and
// errors only with --save-detailed. A request that did not complete has
// output length and latency 0, as in vLLM.
func addPerRequest(out map[string]any, run *openloop.Run, detailed bool) {
	n := len(run.Results)
	inLens, outLens, ttfts, lats := make([]int, n), make([]int, n), make([]float64, n), make([]float64, n)
	itls, starts, queued := make([][]float64, n), make([]float64, n), make([]float64, n)
	texts, errs := make([]string, n), make([]string, n)
	for i, r := range run.Results {
		inLens[i], texts[i], errs[i] = r.PromptTokens, r.Text, r.Error
		if stats.Completed(r) {
			outLens[i], lats[i] = r.OutputTokens, r.E2EL.Seconds()
		}
		ttfts[i] = r.TTFT.Seconds()
		itls[i] = make([]float64, len(r.ITLs))
		for j, d := range r.ITLs {
			itls[i][j] = d.Seconds()
		}
		if !r.Sent.IsZero() {
			starts[i] = r.Sent.Sub(run.Start).Seconds()
		}
		if i < len(run.Queued) {
			queued[i] = run.Queued[i].Seconds()
		}
	}
	out["latencies"], out["queue_times"] = lats, queued
	if detailed {
		out["input_lens"], out["output_lens"], out["ttfts"], out["itls"] = inLens, outLens, ttfts, itls
		out["start_times"], out["generated_texts"], out["errors"] = starts, texts, errs
	}
}
