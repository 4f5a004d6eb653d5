//go:build e2e

package e2e

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vllm-prober/vllm-prober/internal/daemontest"
	"github.com/vllm-prober/vllm-prober/internal/promtext"
	"github.com/vllm-prober/vllm-prober/internal/testfile"
	"github.com/vllm-prober/vllm-prober/simulator"
	"github.com/vllm-prober/vllm-prober/simulator/simtest"
)

// soakDefaultDuration is the soak length in CI; `make soak` sets
// SOAK_DURATION (30m by default).
const soakDefaultDuration = 90 * time.Second

// soakSample is one reading of the daemon's own resource metrics.
type soakSample struct {
	at         time.Duration // since the daemon started probing
	goroutines float64
	heap       float64 // go_memstats_heap_inuse_bytes
	rss        float64 // process_resident_memory_bytes
	offered    float64
}

// soakLimit is how much a resource may grow over the measured window
// (Theil-Sen slope times the window) before the soak fails: the larger of
// an absolute floor and a fraction of the window's median.
type soakLimit struct {
	name     string
	value    func(soakSample) float64
	absolute float64
	relative float64
	unit     float64 // for the report
	unitName string
}

var soakLimits = []soakLimit{
	{"goroutines", func(s soakSample) float64 { return s.goroutines }, 15, 0.15, 1, ""},
	{"heap in use", func(s soakSample) float64 { return s.heap }, 8 << 20, 0.25, 1 << 20, " MiB"},
	{"RSS", func(s soakSample) float64 { return s.rss }, 16 << 20, 0.25, 1 << 20, " MiB"},
}

// soakConfig is the prober config of the soak: 20 requests/s over two
// probes, a third probe added and removed by reloads, ledger rotation on.
func soakConfig(simURL, ledger string, withExtra bool) string {
	extra := ""
	if withExtra {
		extra = `  - name: extra
    api: completions
    rate: 2
    timeout: 2s
    workload: {random: {input_tokens: 16, output_tokens: 4}}
`
	}
	return fmt.Sprintf(`global:
  ledger: {path: %q, max_size_mb: 2, max_files: 2, record_text: failures}
  server_metrics: {interval: 2s, timeout: 1s}
targets:
  - name: sim
    url: %s
probes:
  - name: chat
    api: chat
    rate: 10
    timeout: 2s
    slo: {ttft: 500ms}
    workload:
      prompts:
        - messages: [{role: user, content: "What is 12*12? Digits only."}]
          expect: {regex: '\b144\b'}
  - name: completions
    api: completions
    rate: 10
    timeout: 2s
    workload: {random: {input_tokens: 64, output_tokens: 16}}
%s`, ledger, simURL, extra)
}

// soakFaults draws a random mix of two or three faults.
func soakFaults(rng *rand.Rand) simulator.Faults {
	f := simulator.Faults{StallDuration: 3 * time.Second, SlowHeadersDelay: 300 * time.Millisecond}
	set := []func(r float64){
		func(r float64) { f.HTTP500 = r }, func(r float64) { f.HTTP503 = r }, func(r float64) { f.HTTP429 = r },
		func(r float64) { f.SlowHeaders = r }, func(r float64) { f.Stall = r }, func(r float64) { f.Disconnect = r },
		func(r float64) { f.ErrorEvent = r }, func(r float64) { f.MalformedEvent = r }, func(r float64) { f.NoDone = r },
		func(r float64) { f.WrongModel = r }, func(r float64) { f.BadAnswer = r },
	}
	for range 2 + rng.IntN(2) {
		set[rng.IntN(len(set))](0.02 + 0.15*rng.Float64())
	}
	return f
}

func soakDuration(t *testing.T) time.Duration {
	s := os.Getenv("SOAK_DURATION")
	if s == "" {
		return soakDefaultDuration
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 30*time.Second {
		t.Fatalf("SOAK_DURATION=%q: want a Go duration of at least 30s", s)
	}
	return d
}

// TestSoak runs the daemon at 20 requests/s against the simulator with
// random faults that change every 10s and a reload every 20s, samples its
// goroutines, heap and RSS, and fails when any of them grows after the
// warm-up (a third of the run, at most 10 minutes).
func TestSoak(t *testing.T) {
	dur := soakDuration(t)
	o := simulator.DefaultOptions()
	o.Seed = 42
	sim, simURL := simtest.Start(t, o)
	dir := t.TempDir()
	ledger := filepath.Join(dir, "ledger.jsonl")
	cfgPath := testfile.Write(t, dir, "soak.yml", soakConfig(simURL, ledger, false))
	d := daemontest.Start(t, binary, "--config.file="+cfgPath)

	samples := soakRun(t, d, sim, dur, func(extra bool) {
		testfile.Write(t, dir, "soak.yml", soakConfig(simURL, ledger, extra))
		if err := d.Cmd.Process.Signal(syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
	})
	fams := promtext.Scrape(t, d.URL("/metrics"))
	if n := relValue(fams, "vllm_prober_ledger_write_errors_total", nil); n != 0 {
		t.Errorf("%g ledger write errors", n)
	}
	if relValue(fams, "vllm_probe_requests_total", map[string]string{"disposition": "accepted"}) == 0 {
		t.Error("no accepted request in the whole soak")
	}
	if err := d.Stop(t, syscall.SIGTERM); err != nil {
		t.Errorf("daemon exit: %v", err)
	}
	relNoPanic(t, d.Logs())

	// The status page keeps 5 minutes of samples, so memory rises until
	// that window is full: long soaks measure after 10 minutes.
	warm := min(dur/3, 10*time.Minute)
	report := soakReport(samples, warm, dur)
	t.Log("\n" + report)
	if p := os.Getenv("SOAK_REPORT"); p != "" {
		if err := os.WriteFile(p, []byte(report), 0o644); err != nil {
			t.Error(err)
		}
	}
	for _, failure := range soakCheck(samples, warm) {
		t.Error(failure)
	}
}

// soakRun drives faults and reloads for dur and returns the samples.
func soakRun(t *testing.T, d *daemontest.Proc, sim *simulator.Server, dur time.Duration, reload func(extra bool)) []soakSample {
	t.Helper()
	rng := rand.New(rand.NewPCG(42, 9))
	every := min(max(dur/60, 2*time.Second), 30*time.Second)
	start := time.Now()
	var samples []soakSample
	nextFaults, nextReload, extra := time.Duration(0), 20*time.Second, false
	for since := time.Duration(0); since < dur; since = time.Since(start) {
		if since >= nextFaults {
			sim.SetFaults(soakFaults(rng))
			nextFaults += 10 * time.Second
		}
		if since >= nextReload {
			extra = !extra
			reload(extra)
			nextReload += 20 * time.Second
		}
		fams, err := promtext.Fetch(d.URL("/metrics"))
		if err != nil {
			t.Fatalf("scrape at %s: %v; logs:\n%s", since, err, relTail(d.Logs(), 4000))
		}
		samples = append(samples, soakSample{
			at:         since,
			goroutines: relValue(fams, "go_goroutines", nil),
			heap:       relValue(fams, "go_memstats_heap_inuse_bytes", nil),
			rss:        relValue(fams, "process_resident_memory_bytes", nil),
			offered:    relValue(fams, "vllm_probe_requests_offered_total", nil),
		})
		time.Sleep(every - time.Since(start)%every)
	}
	return samples
}

// theilSen returns the median of the pairwise slopes of (x, y): a trend
// that GC sawtooth and in-flight bursts do not move much.
func theilSen(x, y []float64) float64 {
	var slopes []float64
	for i := range x {
		for j := i + 1; j < len(x); j++ {
			if x[j] != x[i] {
				slopes = append(slopes, (y[j]-y[i])/(x[j]-x[i]))
			}
		}
	}
	return soakMedian(slopes)
}

func soakMedian(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// soakTrend is one resource's behaviour after the warm-up.
type soakTrend struct {
	limit                   soakLimit
	median, growth, allowed float64
}

func soakTrends(samples []soakSample, warm time.Duration) []soakTrend {
	var x []float64
	var after []soakSample
	for _, s := range samples {
		if s.at >= warm {
			after = append(after, s)
			x = append(x, s.at.Seconds())
		}
	}
	var out []soakTrend
	for _, l := range soakLimits {
		y := make([]float64, len(after))
		for i, s := range after {
			y[i] = l.value(s)
		}
		tr := soakTrend{limit: l, median: soakMedian(y)}
		if len(x) > 1 {
			tr.growth = theilSen(x, y) * (x[len(x)-1] - x[0])
		}
		tr.allowed = math.Max(l.absolute, l.relative*tr.median)
		out = append(out, tr)
	}
	return out
}

// soakCheck returns one message per resource that grew after the warm-up.
func soakCheck(samples []soakSample, warm time.Duration) []string {
	var after int
	for _, s := range samples {
		if s.at >= warm {
			after++
		}
	}
	if after < 8 {
		return []string{fmt.Sprintf("only %d samples after the warm-up, want at least 8", after)}
	}
	var out []string
	for _, tr := range soakTrends(samples, warm) {
		if tr.growth > tr.allowed {
			out = append(out, fmt.Sprintf("%s grows after the warm-up: trend %+.1f%s over the window, allowed %.1f%s (median %.1f%s)",
				tr.limit.name, tr.growth/tr.limit.unit, tr.limit.unitName, tr.allowed/tr.limit.unit, tr.limit.unitName,
				tr.median/tr.limit.unit, tr.limit.unitName))
		}
	}
	return out
}

// soakReport renders the samples (at most 16 rows) and trends as Markdown.
func soakReport(samples []soakSample, warm, dur time.Duration) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Soak: %s at 20 requests/s (+2/s every other 20s), faults changing every 10s, reload every 20s; warm-up %s.\n\n", dur, warm)
	b.WriteString("| time | goroutines | heap in use (MiB) | RSS (MiB) | offered |\n|---|---|---|---|---|\n")
	step := max(1, (len(samples)+15)/16)
	for i, s := range samples {
		if i%step != 0 && i != len(samples)-1 {
			continue
		}
		fmt.Fprintf(&b, "| %s | %.0f | %.1f | %.1f | %.0f |\n", s.at.Round(time.Second), s.goroutines, s.heap/(1<<20), s.rss/(1<<20), s.offered)
	}
	b.WriteString("\n| resource | median after warm-up | trend over the window (Theil-Sen) | allowed |\n|---|---|---|---|\n")
	for _, tr := range soakTrends(samples, warm) {
		u, n := tr.limit.unit, tr.limit.unitName
		fmt.Fprintf(&b, "| %s | %.1f%s | %+.1f%s | %.1f%s |\n", tr.limit.name, tr.median/u, n, tr.growth/u, n, tr.allowed/u, n)
	}
	return b.String()
}

// TestSoakCheck shows that the trend criterion catches a slow leak under
// GC sawtooth and in-flight noise, and passes a flat series.
func TestSoakCheck(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	series := func(leakPerMin float64) []soakSample {
		var out []soakSample
		for i := range 90 {
			at := time.Duration(i) * 2 * time.Second
			saw := float64(i%7) * (3 << 20) // GC sawtooth
			out = append(out, soakSample{
				at:         at,
				goroutines: 40 + float64(rng.IntN(20)) + leakPerMin*at.Minutes()/(1<<20)*10,
				heap:       20<<20 + saw + leakPerMin*at.Minutes(),
				rss:        60<<20 + saw + leakPerMin*at.Minutes(),
			})
		}
		return out
	}
	tests := []struct {
		name       string
		leakPerMin float64
		wantFail   bool
	}{
		{"flat", 0, false},
		{"leaking 8 MiB per minute", 8 << 20, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			failures := soakCheck(series(tc.leakPerMin), 30*time.Second)
			if got := len(failures) > 0; got != tc.wantFail {
				t.Errorf("failures %q, want failing %v", failures, tc.wantFail)
			}
		})
	}
}
