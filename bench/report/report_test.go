package report

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/vllm-prober/vllm-prober/bench/openloop"
	"github.com/vllm-prober/vllm-prober/bench/stats"
	"github.com/vllm-prober/vllm-prober/internal/testfile"
	"github.com/vllm-prober/vllm-prober/probe"
)

// syntheticRun is a run whose every figure is worked out by hand: two
// completed requests (one accepted, one latency failure) and one failure.
func syntheticRun() *openloop.Run {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	msd := func(n float64) time.Duration { return time.Duration(n * float64(time.Millisecond)) }
	return &openloop.Run{Start: t0, End: t0.Add(2 * time.Second), Span: time.Second, Results: []*probe.Result{
		{Seq: 1, Sent: t0, Disposition: probe.Accepted, TTFT: msd(100), ITLs: []time.Duration{msd(10), msd(20)},
			E2EL: msd(130), TPOT: msd(15), OutputTokens: 3, PromptTokens: 10},
		{Seq: 2, Sent: t0.Add(500 * time.Millisecond), Disposition: probe.LatencyFailure, Reason: probe.ReasonLatency,
			TTFT: msd(200), ITLs: []time.Duration{msd(30)}, E2EL: msd(230), TPOT: msd(30), OutputTokens: 2, PromptTokens: 20},
		{Seq: 3, Sent: t0.Add(time.Second), Disposition: probe.ServerFailure, Reason: probe.ReasonHTTP5xx, Error: "http 500: boom"},
	}, Ended: []time.Time{t0.Add(msd(130)), t0.Add(msd(730)), t0.Add(1600 * time.Millisecond)}}
}

func syntheticSettings() Settings {
	return Settings{Backend: "openai", Model: "org/sim-llama", NumPrompts: 3, RequestRate: 3, Burstiness: 1,
		MaxConcurrency: 4, Goodput: stats.Goodput{TTFT: 150 * time.Millisecond, HasTTFT: true},
		PercentileMetrics: stats.RequestMetrics, Percentiles: []float64{99, 99.9}}
}

// TestPrintResultGolden compares with testdata/result_block.golden, which
// was printed by Python with vLLM's own format strings for these figures.
func TestPrintResultGolden(t *testing.T) {
	s := syntheticSettings()
	m := stats.Compute(syntheticRun(), stats.Options{Good: s.Goodput.Rule(), Percentiles: s.Percentiles})
	var buf bytes.Buffer
	PrintResult(&buf, s, m)
	testfile.CompareGolden(t, "testdata/result_block.golden", buf.String())
}

func TestPrintResultOptionalLines(t *testing.T) {
	s := syntheticSettings()
	s.MaxConcurrency, s.RequestRate, s.Goodput, s.PercentileMetrics = 0, math.Inf(1), stats.Goodput{}, []string{stats.MetricTTFT}
	var buf bytes.Buffer
	PrintResult(&buf, s, stats.Compute(syntheticRun(), stats.Options{Good: s.Goodput.Rule(), Percentiles: s.Percentiles}))
	for _, absent := range []string{"Maximum request concurrency:", "Request rate configured", "Request goodput", "TPOT", "ITL", "E2EL", "TTFA"} {
		t.Run(absent, func(t *testing.T) {
			if strings.Contains(buf.String(), absent) {
				t.Errorf("%q printed although not asked for:\n%s", absent, buf.String())
			}
		})
	}
}

// TestPrintResultTTFA: when the server streamed reasoning, a TTFA section
// in vLLM's print style follows vLLM's sections, over the completed
// requests that answered; the saved result has its keys.
func TestPrintResultTTFA(t *testing.T) {
	s := syntheticSettings()
	run := syntheticRun()
	run.Results[0].TTFA, run.Results[0].ReasoningEvents = 300*time.Millisecond, 12
	run.Results[1].TTFA, run.Results[1].ReasoningEvents = 500*time.Millisecond, 20
	m := stats.Compute(run, stats.Options{Good: s.Goodput.Rule(), Percentiles: s.Percentiles})
	var buf bytes.Buffer
	PrintResult(&buf, s, m)
	want := strings.Join([]string{
		"------------Time to First Answer Token------------",
		"Mean TTFA (ms):                          400.00    ",
		"Median TTFA (ms):                        400.00    ",
		"P99 TTFA (ms):                           498.00    ",
		"P99.9 TTFA (ms):                         499.80    ",
		"==================================================",
		"",
	}, "\n")
	if !strings.HasSuffix(buf.String(), want) {
		t.Errorf("result block ends\n%s\nwant it to end\n%s", buf.String(), want)
	}
	out := marshalMap(t, s, run, false)
	if out["mean_ttfa_ms"] != 400.0 || out["p99_ttfa_ms"] != 498.0 {
		t.Errorf("saved TTFA: mean %v p99 %v, want 400 and 498", out["mean_ttfa_ms"], out["p99_ttfa_ms"])
	}
}

func TestPrintLedger(t *testing.T) {
	s := syntheticSettings()
	m := stats.Compute(syntheticRun(), stats.Options{Good: s.Goodput.Rule(), Percentiles: s.Percentiles})
	var buf bytes.Buffer
	PrintLedger(&buf, s, m)
	for _, want := range []string{
		"Offered requests:                        3         ",
		"Offered load (req/s):                    3.00      ",
		// 3 completed (the 500 answer included) and 1 accepted over the
		// 1.6s from the first send to the last answer.
		"Completed requests:                      3         ",
		"Wall-clock time (s):                     1.60      ",
		"Completed throughput (req/s):            1.88      ",
		"Goodput (accepted req/s):                0.62      ",
		"P99 TTFT (ms):                           199.00    ",
		"Acceptance ratio:                        0.3333    ",
		"server_failure:                          1         ",
		"latency_failure:                         1         ",
		"accepted:                                1         ",
		"unfinished:                              0         ",
		"http_5xx:                                1         ",
	} {
		t.Run(strings.Fields(want)[0], func(t *testing.T) {
			if !strings.Contains(buf.String(), want+"\n") {
				t.Errorf("missing line %q in:\n%s", want, buf.String())
			}
		})
	}
}

func TestMarshalResultKeys(t *testing.T) {
	s := syntheticSettings()
	run := syntheticRun()
	got := marshalMap(t, s, run, true)
	want := map[string]any{"date": "20260102-030405", "backend": "openai", "endpoint_type": "openai", "label": nil,
		"model_id": "org/sim-llama", "num_prompts": 3.0, "request_rate": 3.0, "max_concurrency": 4.0, "completed": 2.0,
		"failed": 1.0, "request_goodput": 0.5, "p99_ttft_ms": 199.0, "p99.9_itl_ms": 29.98, "mean_e2el_ms": 180.0,
		"std_tpot_ms": 7.5, "offered": 3.0, "acceptance_ratio": 1.0 / 3, "server_completed": 3.0, "wall_clock_s": 1.6,
		"completed_throughput": 3 / 1.6, "goodput": 1 / 1.6}
	for _, k := range vllmResultKeys {
		if _, ok := got[k]; !ok {
			t.Errorf("saved JSON lacks vLLM key %q", k)
		}
	}
	checkNotDetailed(t, s, run)
	for k, v := range want {
		t.Run(k, func(t *testing.T) {
			g, ok := got[k]
			if f, isF := v.(float64); isF {
				gf, _ := g.(float64)
				if !ok || math.Abs(gf-f) > 1e-9 {
					t.Errorf("%s = %v, want %v", k, g, v)
				}
				return
			}
			if !ok || g != v {
				t.Errorf("%s = %v, want %v", k, g, v)
			}
		})
	}
}

// marshalMap decodes the result Marshal saves for run.
func marshalMap(t *testing.T, s Settings, run *openloop.Run, detailed bool) map[string]any {
	t.Helper()
	b, err := Marshal(s, stats.Compute(run, stats.Options{Good: s.Goodput.Rule(), Percentiles: s.Percentiles}), run, detailed, run.Start, nil)
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// checkNotDetailed checks the result saved without --save-detailed: every
// vLLM key but the per-request lists only --save-detailed adds.
func checkNotDetailed(t *testing.T, s Settings, run *openloop.Run) {
	got := marshalMap(t, s, run, false)
	for _, k := range vllmResultKeys {
		detailed := strings.HasSuffix(k, "_lens") || k == "ttfts" || k == "itls" || k == "start_times" || k == "generated_texts" || k == "errors"
		t.Run("not detailed "+k, func(t *testing.T) {
			if _, ok := got[k]; ok == detailed {
				t.Errorf("key %q present=%v, want %v (detailed keys only with --save-detailed)", k, ok, !detailed)
			}
		})
	}
}

// vllmResultKeys are the keys vllm bench serve saves for a generation run
// with --save-detailed and the default metrics.
var vllmResultKeys = []string{"date", "endpoint_type", "backend", "label", "model_id", "tokenizer_id", "num_prompts",
	"request_rate", "burstiness", "max_concurrency", "duration", "completed", "failed", "total_input_tokens",
	"total_output_tokens", "request_throughput", "request_goodput", "output_throughput", "total_token_throughput",
	"max_output_tokens_per_s", "max_concurrent_requests", "rtfx", "latencies", "queue_times", "input_lens", "output_lens", "ttfts", "itls",
	"start_times", "generated_texts", "errors", "mean_ttft_ms", "median_ttft_ms", "std_ttft_ms", "p99_ttft_ms",
	"mean_tpot_ms", "median_tpot_ms", "std_tpot_ms", "p99_tpot_ms", "mean_itl_ms", "median_itl_ms", "std_itl_ms", "p99_itl_ms"}

func TestDefaultResultFilename(t *testing.T) {
	at := time.Date(2026, 11, 29, 8, 9, 10, 0, time.UTC)
	tests := []struct {
		name string
		s    Settings
		want string
	}{
		{"inf rate", Settings{Backend: "openai", Model: "meta/llama", RequestRate: math.Inf(1)}, "openai-infqps-llama-20261129-080910.json"},
		{"integer rate", Settings{Backend: "openai-chat", Model: "m", RequestRate: 10, MaxConcurrency: 8}, "openai-chat-10.0qps-concurrency8-m-20261129-080910.json"},
		{"label", Settings{Backend: "openai", Label: "run1", Model: "m", RequestRate: 0.5}, "run1-0.5qps-m-20261129-080910.json"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Filename(tt.s, at); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}
