package bench

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/alecthomas/kingpin/v2"

	"github.com/vllm-prober/vllm-prober/bench/stats"
	"github.com/vllm-prober/vllm-prober/probe"
	"github.com/vllm-prober/vllm-prober/probe/judge"
	"github.com/vllm-prober/vllm-prober/probe/workload"
)

// parseBench parses args the way main does and returns the options.
func parseBench(args ...string) (Options, error) {
	app := kingpin.New("test", "")
	app.Terminate(nil)
	flags := RegisterBenchFlags(app.Command("bench", ""))
	if _, err := app.Parse(append([]string{"bench"}, args...)); err != nil {
		return Options{}, err
	}
	return flags.Options()
}

func TestBenchFlagsDefaults(t *testing.T) {
	o, err := parseBench()
	if err != nil {
		t.Fatal(err)
	}
	checks := []struct {
		name string
		ok   bool
	}{
		{"base-url from host and port", o.BaseURL == "http://127.0.0.1:8000"},
		{"endpoint", o.Endpoint == "/v1/completions"},
		{"backend", o.Backend == backendOpenAI},
		{"dataset", o.DatasetName == datasetRandom},
		{"random lens", o.RandomInputLen == 1024 && o.RandomOutputLen == 128 && o.RandomRangeRatio == 0 && o.RandomPrefixLen == 0},
		{"num-prompts", o.NumPrompts == 1000},
		{"request-rate inf", math.IsInf(o.RequestRate, 1)},
		{"burstiness", o.Burstiness == 1},
		{"percentiles", len(o.MetricPercentiles) == 1 && o.MetricPercentiles[0] == 99},
		{"metrics", strings.Join(o.PercentileMetrics, ",") == "ttft,tpot,itl"},
		{"no goodput", !o.Goodput.IsSet()},
		{"no ready check", o.ReadyCheckTimeout == 0},
	}
	for _, c := range checks {
		t.Run(c.name, func(t *testing.T) {
			if !c.ok {
				t.Errorf("unexpected default: %+v", o)
			}
		})
	}
}

func TestBenchFlagsGoodput(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want stats.Goodput
	}{
		{"one value", []string{"--goodput", "ttft:300 tpot:50"}, stats.Goodput{TTFT: 300 * time.Millisecond, TPOT: 50 * time.Millisecond, HasTTFT: true, HasTPOT: true}},
		{"vllm nargs", []string{"--goodput", "ttft:300", "e2el:2000.5"}, stats.Goodput{TTFT: 300 * time.Millisecond, E2EL: 2000500 * time.Microsecond, HasTTFT: true, HasE2EL: true}},
		{"repeated", []string{"--goodput", "tpot:5", "--goodput", "ttft:1"}, stats.Goodput{TTFT: time.Millisecond, TPOT: 5 * time.Millisecond, HasTTFT: true, HasTPOT: true}},
		{"zero is an objective", []string{"--goodput", "ttft:0"}, stats.Goodput{HasTTFT: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, err := parseBench(tt.args...)
			if err != nil {
				t.Fatal(err)
			}
			if o.Goodput != tt.want {
				t.Errorf("goodput = %+v, want %+v", o.Goodput, tt.want)
			}
		})
	}
}

func TestBenchFlagsBad(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"goodput not a number", []string{"--goodput", "ttft:abc"}, `--goodput "ttft:abc"`},
		{"goodput no colon", []string{"--goodput", "ttft"}, "KEY:VALUE"},
		{"goodput unknown key", []string{"--goodput", "itl:5"}, "ttft, tpot, e2el"},
		{"goodput negative", []string{"--goodput", "ttft:-1"}, "negative"},
		{"negative rate", []string{"--request-rate=-2"}, "--request-rate"},
		{"zero rate", []string{"--request-rate", "0"}, "--request-rate"},
		{"zero prompts", []string{"--num-prompts", "0"}, "--num-prompts"},
		{"zero burstiness", []string{"--burstiness", "0"}, "--burstiness"},
		{"bad range ratio", []string{"--random-range-ratio", "1"}, "--random-range-ratio"},
		{"bad percentile", []string{"--metric-percentiles", "99,101"}, "--metric-percentiles"},
		{"bad metric", []string{"--percentile-metrics", "ttft,foo"}, "--percentile-metrics"},
		{"bad base url", []string{"--base-url", "localhost:8000"}, "--base-url"},
		{"bad endpoint", []string{"--endpoint", "v1/completions"}, "--endpoint"},
		{"chat backend on completions", []string{"--backend", "openai-chat"}, "--endpoint /v1/chat/completions"},
		{"completions backend elsewhere", []string{"--endpoint", "/v1/embeddings"}, "completions endpoint"},
		{"sharegpt without path", []string{"--dataset-name", "sharegpt"}, "--dataset-path"},
		{"stray argument", []string{"tpot:5"}, "unexpected argument"},
		{"negative ready check", []string{"--ready-check-timeout-sec=-1"}, "--ready-check-timeout-sec"},
		{"negative concurrency", []string{"--max-concurrency=-1"}, "--max-concurrency"},
		{"negative prefix", []string{"--random-prefix-len=-1"}, "--random-prefix-len -1 must not be negative"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parseBench(tt.args...)
			if err == nil {
				t.Fatal("no error")
			}
			if !errors.Is(err, ErrUsage) || ExitCode(err) != 2 {
				t.Errorf("error %q: exit code %d, want 2", err, ExitCode(err))
			}
			if !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "\n") {
				t.Errorf("error %q: want one line naming %q", err, tt.want)
			}
		})
	}
}

func TestBenchFlagsKingpinErrors(t *testing.T) {
	for _, args := range [][]string{{"--no-such-flag"}, {"--num-prompts", "x"}, {"--backend", "tgi"}} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			if _, err := parseBench(args...); err == nil {
				t.Error("parse accepted bad input; main exits 2 on parse errors")
			}
		})
	}
}

func TestMessage(t *testing.T) {
	_, err := parseBench("--goodput", "ttft:abc")
	if got, want := Message("bench", err), `vllm-prober bench: error: --goodput "ttft:abc": want KEY:VALUE with a number of milliseconds, e.g. ttft:300`; got != want {
		t.Errorf("Message = %q, want %q", got, want)
	}
}

func TestExitCode(t *testing.T) {
	for _, tt := range []struct {
		name string
		err  error
		want int
	}{{"ok", nil, 0}, {"usage", usageErr("x"), 2}, {"runtime", errors.New("server down"), 1}} {
		t.Run(tt.name, func(t *testing.T) {
			if got := ExitCode(tt.err); got != tt.want {
				t.Errorf("ExitCode = %d, want %d", got, tt.want)
			}
		})
	}
}

// TestGoodputZero checks vLLM's rule "good when objective >= measured": an
// objective of 0 admits no measured request, in vLLM's goodput and in the
// judge's, while a one-token request's TPOT of 0 still meets tpot:0.
func TestGoodputZero(t *testing.T) {
	tests := []struct {
		pairs            string
		ttft, tpot, e2el time.Duration
		good             bool
	}{
		{"ttft:0", time.Millisecond, 0, time.Millisecond, false},
		{"e2el:0", time.Microsecond, 0, time.Microsecond, false},
		{"tpot:0", time.Millisecond, 0, time.Millisecond, true},
		{"tpot:0", time.Millisecond, time.Microsecond, time.Millisecond, false},
		{"ttft:5", 5 * time.Millisecond, 0, time.Second, true},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.pairs, " ", tt.ttft, tt.tpot), func(t *testing.T) {
			g, err := parseGoodput([]string{tt.pairs})
			if err != nil {
				t.Fatal(err)
			}
			if got := g.Good(tt.ttft, tt.tpot, tt.e2el); got != tt.good {
				t.Errorf("Good = %v, want %v", got, tt.good)
			}
			o := Options{Goodput: g}
			res := &probe.Result{TTFT: tt.ttft, TPOT: tt.tpot, E2EL: tt.e2el}
			judge.Request(benchProbe(&o), nil, res)
			if judged := len(res.SLOViolations) == 0; judged != tt.good {
				t.Errorf("the judge's SLO violations %v, want good=%v", res.SLOViolations, tt.good)
			}
		})
	}
}

// TestBenchRandomPrefix: --random-prefix-len N makes every random prompt
// start with the same N tokens, followed by --random-input-len random ones
// (vLLM's RandomDataset: prompt length = prefix + input length).
func TestBenchRandomPrefix(t *testing.T) {
	o, err := parseBench("--random-prefix-len", "32", "--random-input-len", "16", "--random-range-ratio", "0.5", "--seed", "4")
	if err != nil {
		t.Fatal(err)
	}
	p := benchProbe(&o)
	if r := p.Workload.Random; r == nil || r.PrefixTokens != 32 || r.InputTokens != 16 || r.Seed != 4 {
		t.Fatalf("bench workload %+v, want prefix 32, input 16, seed 4", r)
	}
	w, err := workload.New(p, nil)
	if err != nil {
		t.Fatal(err)
	}
	var first []int
	rests := map[string]bool{}
	for seq := uint64(1); seq <= 20; seq++ {
		ids := w.ItemAt(context.Background(), "m", seq).Prompt.([]int)
		if first == nil {
			first = ids
		}
		if len(ids) < 32+8 || len(ids) > 32+24 || !slices.Equal(ids[:32], first[:32]) {
			t.Fatalf("prompt %d: %d tokens starting %v, want the 32-token prefix %v then 8 to 24 more", seq, len(ids), ids[:min(32, len(ids))], first[:32])
		}
		rests[fmt.Sprint(ids[32:])] = true
	}
	if len(rests) != 20 {
		t.Errorf("%d different rests in 20 prompts, want 20", len(rests))
	}
}
