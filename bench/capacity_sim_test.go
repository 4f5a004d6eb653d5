package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	neturl "net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/common/model"

	"github.com/vllm-prober/vllm-prober/bench/capacity"
	"github.com/vllm-prober/vllm-prober/bench/plot"
	"github.com/vllm-prober/vllm-prober/bench/stats"
	"github.com/vllm-prober/vllm-prober/config"
	"github.com/vllm-prober/vllm-prober/internal/svgchart/svgtest"
	"github.com/vllm-prober/vllm-prober/probe"
	"github.com/vllm-prober/vllm-prober/probe/ledger/ledgertest"
	"github.com/vllm-prober/vllm-prober/simulator"
)

// saturatingSim is a simulator with a batch of two sequences and fast
// steps: it serves a few tens of short requests per second, then queues.
func saturatingSim(t *testing.T) string {
	return slowSaturatingSim(t, 1)
}

// slowSaturatingSim is saturatingSim with every step slow times longer, so
// it serves slow times fewer requests per second. A test that scales its
// rates down and its windows and objectives up by slow sends the same
// requests and sees the same queues on the simulator's clock, while the
// machine's own scheduling delays, which do not scale, weigh slow times
// less: on a loaded machine they are tens of milliseconds.
func slowSaturatingSim(t *testing.T, slow time.Duration) string {
	url, _ := startSim(t, func(o *simulator.Options) {
		o.MaxNumSeqs = 2
		o.PrefillBase, o.PrefillPerToken = slow*2*time.Millisecond, slow*10*time.Microsecond
		o.DecodeBase, o.DecodePerSeq = slow*2*time.Millisecond, slow*500*time.Microsecond
	})
	return url
}

// capacitySlow is how much slower than saturatingSim the simulator of the
// capacity tests that judge latency runs.
const capacitySlow = 4

func TestCapacityStableAcrossSeeds(t *testing.T) {
	const slow = capacitySlow
	stairs := []float64{20 / slow, 40 / slow, 80 / slow, 160 / slow}
	var rated []float64
	for _, seed := range []int64{1, 2} {
		url := slowSaturatingSim(t, slow)
		w := benchTestOptions(url)
		w.RandomInputLen, w.RandomOutputLen, w.Goodput = 32, 8, stats.Goodput{E2EL: slow * 150 * time.Millisecond, HasE2EL: true}
		dir := t.TempDir()
		var stdout bytes.Buffer
		out, err := Capacity(context.Background(), CapacityOptions{Workload: w, Rates: stairs, Repeats: 2,
			Duration: slow * 600 * time.Millisecond, Warmup: slow * 200 * time.Millisecond, Burstiness: 1, Seed: seed,
			Rule: capacity.PassRule{MinAcceptance: 0.99, Percentile: 99}, RuleFromProbe: true, OutputDir: dir, Stamp: "t"},
			Env{Stdout: &stdout})
		if err != nil {
			t.Fatal(err)
		}
		s := out.Search
		t.Logf("seed %d:\n%s", seed, stdout.String())
		if !s.Saturated || s.Rated <= 0 {
			t.Fatalf("seed %d: rated %v saturated %v: the simulator should saturate inside the staircase", seed, s.Rated, s.Saturated)
		}
		rated = append(rated, s.Rated)
		checkCapacityFiles(t, out, stdout.String())
	}
	// One staircase step at the rated load: the gap to the next stair.
	step := 0.0
	for i := range stairs[:len(stairs)-1] {
		if stairs[i] <= rated[0] && rated[0] < stairs[i+1] {
			step = stairs[i+1] - stairs[i]
		}
	}
	if d := rated[0] - rated[1]; d > step || -d > step {
		t.Errorf("rated capacity %v vs %v across seeds: differ by more than one staircase step (%v)", rated[0], rated[1], step)
	}
}

// checkCapacityFiles checks the report, the chart and the ledger exist
// and agree: the ledger has one line per measured request, each naming its
// level and repeat, and the count printed is the lines written.
func checkCapacityFiles(t *testing.T, out *CapacityOutcome, stdout string) {
	t.Helper()
	b, err := os.ReadFile(out.SVGPath)
	if err != nil {
		t.Fatal(err)
	}
	svgtest.Doc(t, b)
	if _, err := os.Stat(out.JSONPath); err != nil {
		t.Error(err)
	}
	raw, err := os.ReadFile(out.LedgerOf)
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.Count(raw, []byte("\n"))
	if want := fmt.Sprintf("Ledger: %s (%d requests)\n", out.LedgerOf, lines); !strings.Contains(stdout, want) {
		t.Errorf("output lacks %q", want)
	}
	recs := ledgertest.Read(t, out.LedgerOf)
	perRepeat := map[string]int{}
	for _, r := range recs {
		if r.Level == nil || r.Repeat == nil {
			t.Fatalf("record %d has no level or repeat", r.Seq)
		}
		perRepeat[fmt.Sprint(*r.Level, "/", *r.Repeat)]++
	}
	offered := 0
	for _, r := range out.Search.Repeats {
		offered += r.Metrics.Offered
		if n := perRepeat[fmt.Sprint(r.Rate, "/", r.Index+1)]; n != r.Metrics.Offered {
			t.Errorf("level %v repeat %d: %d ledger records, %d offered", r.Rate, r.Index+1, n, r.Metrics.Offered)
		}
	}
	if len(recs) != offered || lines != offered {
		t.Errorf("ledger holds %d records in %d lines, the levels offered %d", len(recs), lines, offered)
	}
}

// TestCapacityConfigServerDown: a configured probe's target that does not
// answer gives one "not ready" error and no log line saying it first.
func TestCapacityConfigServerDown(t *testing.T) {
	srv := httptest.NewServer(nil)
	url := srv.URL
	srv.Close()
	cfg := &config.Config{
		Targets: []config.Target{{Name: "down", URL: url}},
		Probes: []config.Probe{{Name: "cmpl", API: config.APICompletions, Rate: 1, Burstiness: 1, MaxInFlight: 6,
			Timeout: model.Duration(5 * time.Second), Request: config.Request{MaxTokens: 8},
			Workload: config.Workload{Random: &config.RandomWorkload{InputTokens: 16, OutputTokens: 8}},
			Quality:  config.Quality{FinishReasons: []string{"stop", "length"}, MinOutputTokens: 1}, Objective: 0.99}},
	}
	var logs bytes.Buffer
	_, err := Capacity(context.Background(), CapacityOptions{Config: cfg, ProbeName: "cmpl", Rates: []float64{1},
		Repeats: 1, Duration: time.Second, Rule: capacity.PassRule{MinAcceptance: 0.99, Percentile: 99}, RuleFromProbe: true,
		OutputDir: t.TempDir(), Stamp: "c"}, Env{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err == nil || !strings.Contains(err.Error(), "target down: server "+url+" not ready") || ExitCode(err) != 1 {
		t.Fatalf("err = %v (exit %d), want one 'not ready' error, exit 1", err, ExitCode(err))
	}
	if logs.Len() != 0 {
		t.Errorf("want no log line beside the error, got %q", logs.String())
	}
}

// countRequests serves url through a proxy on loopback that counts the
// requests for path.
func countRequests(t *testing.T, url, path string) (string, *atomic.Int64) {
	t.Helper()
	u, err := neturl.Parse(url)
	if err != nil {
		t.Fatal(err)
	}
	var n atomic.Int64
	proxy := httputil.NewSingleHostReverseProxy(u)
	proxy.FlushInterval = -1 // streams pass as written
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == path {
			n.Add(1)
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, &n
}

func TestCapacityConfigProbe(t *testing.T) {
	url, models := countRequests(t, saturatingSim(t), "/v1/models")
	cfg := &config.Config{
		Targets: []config.Target{{Name: "other", URL: "http://127.0.0.1:1", Probes: []string{"none"}}, {Name: "sim", URL: url}},
		Probes: []config.Probe{{Name: "cmpl", API: config.APICompletions, Rate: 1, Burstiness: 1, MaxInFlight: 6,
			Timeout: model.Duration(5 * time.Second), Request: config.Request{MaxTokens: 8, IgnoreEOS: true},
			Workload: config.Workload{Random: &config.RandomWorkload{InputTokens: 16, OutputTokens: 8}},
			SLO:      config.SLO{E2EL: model.Duration(150 * time.Millisecond)},
			Quality:  config.Quality{FinishReasons: []string{"stop", "length"}, MinOutputTokens: 1}, Objective: 0.99}},
	}
	dir := t.TempDir()
	var stdout bytes.Buffer
	out, err := Capacity(context.Background(), CapacityOptions{Config: cfg, ProbeName: "cmpl", Rates: []float64{10, 400},
		Repeats: 1, Resolution: 1000, Duration: 500 * time.Millisecond, Rule: capacity.PassRule{MinAcceptance: 0.99, Percentile: 99}, RuleFromProbe: true,
		OutputDir: dir, Stamp: "c"}, Env{Stdout: &stdout})
	if err != nil {
		t.Fatal(err)
	}
	if out.Search.Rule != "acceptance >= 0.9900 and p99 e2el <= 150ms" {
		t.Errorf("rule %q: want the probe's SLO", out.Search.Rule)
	}
	if len(out.Search.Repeats) == 0 || !out.Search.Repeats[0].Pass || out.Search.Repeats[1].Pass {
		t.Fatalf("want 10 req/s to pass and 400 req/s to fail against a two-sequence batch")
	}
	if n := out.Search.Repeats[1].Metrics.Reasons[probe.ReasonInFlightCap]; n == 0 {
		t.Errorf("400 req/s: no request ended cancelled/in_flight_cap, want the probe's max_in_flight 6 to apply")
	}
	if _, err := os.Stat(filepath.Join(dir, "capacity-c.svg")); err != nil {
		t.Error(err)
	}
	if n := models.Load(); n != 1 {
		t.Errorf("/v1/models asked %d times, want once: the run names the model the ready check learnt", n)
	}
}

// capacityJSON is the part of the saved report the tests read.
type capacityJSON struct {
	Header struct {
		Server   capacity.ServerInfo `json:"server"`
		Arrival  string              `json:"arrival"`
		TimeoutS float64             `json:"timeout_s"`
		WarmupS  float64             `json:"warmup_s"`
	} `json:"header"`
	Rule          string      `json:"rule"`
	RatedCapacity float64     `json:"rated_capacity"`
	Levels        []levelJSON `json:"levels"`
}

// levelJSON is one saved repeat, read by its JSON keys.
type levelJSON map[string]any

// num returns the number at the path of keys, failing the test when there
// is none.
func (l levelJSON) num(t *testing.T, keys ...string) float64 {
	t.Helper()
	var v any = map[string]any(l)
	for _, k := range keys {
		m, _ := v.(map[string]any)
		v = m[k]
	}
	n, ok := v.(float64)
	if !ok {
		t.Fatalf("saved repeat has no number at %v: %v", keys, l)
	}
	return n
}

func readCapacityJSON(t *testing.T, path string) capacityJSON {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var c capacityJSON
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	return c
}

// TestCapacityReportAgainstLedger runs one overloaded level against a
// simulator that stalls some streams past the timeout and answers some
// 500, and checks every figure of the report against a hand count of the
// ledger, and the header.
func TestCapacityReportAgainstLedger(t *testing.T) {
	url, sim := startSim(t, func(o *simulator.Options) {
		o.MaxNumSeqs = 2
		o.PrefillBase, o.DecodeBase = 2*time.Millisecond, 2*time.Millisecond
	})
	sim.SetFaults(simulator.Faults{Stall: 0.15, StallDuration: 5 * time.Second, HTTP500: 0.1})
	w := benchTestOptions(url)
	w.Timeout, w.Goodput = 300*time.Millisecond, stats.Goodput{TTFT: 100 * time.Millisecond, HasTTFT: true}
	dir := t.TempDir()
	var stdout bytes.Buffer
	out, err := Capacity(context.Background(), CapacityOptions{Workload: w, Rates: []float64{150}, Repeats: 1,
		Duration: 400 * time.Millisecond, Warmup: 100 * time.Millisecond, Burstiness: 1, Seed: 1,
		Rule: capacity.PassRule{MinAcceptance: 0.99, Percentile: 99}, RuleFromProbe: true, OutputDir: dir, Stamp: "r"}, Env{Stdout: &stdout})
	if err != nil {
		t.Fatal(err)
	}
	recs := ledgertest.Read(t, out.LedgerOf)
	// The hand count, by the keys of the saved repeat.
	want := map[string]int{"offered": len(recs)}
	for _, r := range recs {
		res := &probe.Result{Disposition: r.Disposition, Reason: r.Reason}
		if r.Sent != nil {
			want["sent"]++
		}
		if res.ServerCompleted() {
			want["completed"]++
			want["prompt_tokens"] += r.PromptTokens
			want["output_tokens"] += r.OutputTokens
		}
		switch r.Disposition {
		case probe.ClientTimeout:
			want["timeouts"]++
		case probe.Unfinished:
			want["unfinished"]++
		}
	}
	c := readCapacityJSON(t, out.JSONPath)
	if len(c.Levels) != 1 {
		t.Fatalf("%d repeats in the report, want 1", len(c.Levels))
	}
	got := c.Levels[0]
	if want["timeouts"] == 0 || got.num(t, "dispositions", string(probe.ServerFailure)) == 0 {
		t.Fatalf("dispositions %v: want stalls timing out and 500 answers", got["dispositions"])
	}
	for _, key := range []string{"offered", "sent", "completed", "prompt_tokens", "output_tokens", "timeouts", "unfinished"} {
		n := got.num(t, key)
		t.Run(key, func(t *testing.T) {
			if n != float64(want[key]) {
				t.Errorf("report says %v, ledger %d", n, want[key])
			}
		})
	}
	completed, wall, p99 := got.num(t, "completed_throughput"), got.num(t, "wall_clock_s"), got.num(t, "e2el_ms", "p99")
	if math.Abs(completed-float64(want["completed"])/wall) > 1e-9 || p99 < 300 || p99 > 300.0001 {
		t.Errorf("completed %v/s over %vs, p99 e2el %vms: want completed over the wall clock and timeouts at 300ms",
			completed, wall, p99)
	}
	h := c.Header
	if h.Server != (capacity.ServerInfo{Model: "sim-llama", Version: "0.26.0"}) || h.TimeoutS != 0.3 || h.WarmupS != 0.1 ||
		h.Arrival != "open loop, exponential gaps (Poisson process) of mean 1/rate, seed 1" {
		t.Errorf("header %+v", h)
	}
	for _, line := range []string{"Server: model sim-llama, vLLM version 0.26.0", "Timeout: 300ms per request",
		"Warm-up: 100ms at the level's rate before each 400ms measured window, not counted; ready check skipped",
		"Pass rule: each of 1 repeats has acceptance >= 0.9900 and p99 ttft <= 100ms"} {
		if !strings.Contains(stdout.String(), line) {
			t.Errorf("output lacks %q", line)
		}
	}
}

// TestCapacityNotSteady runs a level the simulator keeps up with and one
// that overloads it over a short window, with a rule that only asks for a
// steady state: the overloaded level's queue grows through the window, so
// it is flagged not_steady and fails.
func TestCapacityNotSteady(t *testing.T) {
	const slow = capacitySlow
	w := benchTestOptions(slowSaturatingSim(t, slow))
	w.RandomInputLen, w.RandomOutputLen, w.Goodput = 32, 8, stats.Goodput{}
	var stdout bytes.Buffer
	out, err := Capacity(context.Background(), CapacityOptions{Workload: w, Rates: []float64{20 / slow, 400 / slow}, Repeats: 1,
		Order: capacity.OrderAscending, Resolution: 1000, Duration: slow * 600 * time.Millisecond, Burstiness: 1, Seed: 1,
		OutputDir: t.TempDir(), Stamp: "s",
		Rule: capacity.PassRule{Percentile: 99, SteadyRatio: 2, SteadyGrowth: slow * 50 * time.Millisecond}}, Env{Stdout: &stdout})
	if err != nil {
		t.Fatal(err)
	}
	reps := out.Search.Repeats
	if len(reps) != 2 {
		t.Fatalf("%d repeats, want 2:\n%s", len(reps), stdout.String())
	}
	if light := reps[0]; !light.Pass || light.NotSteady {
		t.Errorf("light level: pass %v not_steady %v (ttft p50 thirds %.1fms, %.1fms), want steady",
			light.Pass, light.NotSteady, light.Metrics.SteadyFirstThird, light.Metrics.SteadyLastThird)
	}
	heavy := reps[1]
	if heavy.Pass || !heavy.NotSteady || !strings.HasPrefix(strings.Join(heavy.Why, ";"), "not_steady") {
		t.Errorf("overloading level: pass %v not_steady %v why %v (thirds %.1fms, %.1fms), want not_steady",
			heavy.Pass, heavy.NotSteady, heavy.Why, heavy.Metrics.SteadyFirstThird, heavy.Metrics.SteadyLastThird)
	}
	c := readCapacityJSON(t, out.JSONPath)
	if len(c.Levels) != 2 || c.Levels[0]["not_steady"] != false || c.Levels[1]["not_steady"] != true ||
		c.Levels[1].num(t, "ttft_p50_last_third_ms") <= c.Levels[1].num(t, "ttft_p50_first_third_ms") {
		t.Errorf("saved levels %+v: want the second flagged not_steady", c.Levels)
	}
	if !strings.Contains(stdout.String(), "steady (last-third ttft p50 <= 2.0 x first third, or within 200ms of it)") {
		t.Errorf("the rule printed lacks the steady criterion:\n%s", stdout.String())
	}
}

// TestCapacityChartPlateau checks the chart's curves on a staircase that
// overloads the simulator: the completed curve is per second of the wall
// clock, so it flattens at what the server finishes (about 70 req/s)
// instead of following the offered 400 req/s.
func TestCapacityChartPlateau(t *testing.T) {
	w := benchTestOptions(saturatingSim(t))
	w.RandomInputLen, w.RandomOutputLen, w.Goodput = 32, 8, stats.Goodput{}
	out, err := Capacity(context.Background(), CapacityOptions{Workload: w, Rates: []float64{20, 400}, Repeats: 1, Order: capacity.OrderAscending,
		Resolution: 1000, Duration: 500 * time.Millisecond, Burstiness: 1, Seed: 2, OutputDir: t.TempDir(), Stamp: "p",
		Rule: capacity.PassRule{MinAcceptance: 0.99, Percentile: 99}}, Env{})
	if err != nil {
		t.Fatal(err)
	}
	completed, goodput := plot.CapacityCurves(out.Search)
	if len(completed) != 2 || len(goodput) != 2 {
		t.Fatalf("curves %v %v, want two levels", completed, goodput)
	}
	for i, r := range out.Search.Repeats {
		m := r.Metrics
		if want := float64(m.ServerCompleted) / m.Window.Seconds(); completed[i].Y != want || completed[i].X != r.Rate {
			t.Errorf("level %v: completed point %v, want %d completed / %v = %v", r.Rate, completed[i], m.ServerCompleted, m.Window, want)
		}
	}
	if light := completed[0].Y; light < 10 || light > 30 {
		t.Errorf("20 req/s: completed %v/s, want about 20", light)
	}
	if heavy := completed[1].Y; heavy > 200 {
		t.Errorf("400 req/s: completed %v/s, want the plateau of a server that finishes about 70 req/s", heavy)
	}
}
