package perf

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vllm-prober/vllm-prober/internal/perf/naive"
	"github.com/vllm-prober/vllm-prober/probe"
	"github.com/vllm-prober/vllm-prober/simulator"
)

func TestSummarize(t *testing.T) {
	ms := func(v ...int) []time.Duration {
		var out []time.Duration
		for _, x := range v {
			out = append(out, time.Duration(x)*time.Millisecond)
		}
		return out
	}
	hundred := make([]int, 100)
	for i := range hundred {
		hundred[i] = 100 - i
	}
	tests := []struct {
		name string
		in   []time.Duration
		want Stats
	}{
		{"empty", nil, Stats{}},
		{"one", ms(7), Stats{N: 1, P50: 7 * time.Millisecond, P99: 7 * time.Millisecond, Max: 7 * time.Millisecond}},
		{"unsorted", ms(3, 1, 2, 4), Stats{N: 4, P50: 2 * time.Millisecond, P99: 4 * time.Millisecond, Max: 4 * time.Millisecond}},
		{"hundred", ms(hundred...), Stats{N: 100, P50: 50 * time.Millisecond, P99: 99 * time.Millisecond, Max: 100 * time.Millisecond}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Summarize(tc.in); got != tc.want {
				t.Errorf("Summarize = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestParseGoBench(t *testing.T) {
	out := `goos: linux
pkg: github.com/vllm-prober/vllm-prober/probe
BenchmarkSSE-2   	 7798636	       156.5 ns/op	1802.48 MB/s	       0 B/op	       0 allocs/op
BenchmarkScrape/all-2         	     200	   7612345 ns/op	     1019792 bytes/scrape	     47643 gzip-bytes/scrape	      1694 series	 3990000 B/op	   59000 allocs/op
BenchmarkNoisy-2 some log line
PASS
`
	got, err := ParseGoBench(strings.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, bench, unit string
		want              float64
	}{
		{"ns of SSE", "BenchmarkSSE", "ns/op", 156.5},
		{"allocs of SSE", "BenchmarkSSE", "allocs/op", 0},
		{"custom metric of a sub-benchmark", "BenchmarkScrape/all", "bytes/scrape", 1019792},
	}
	if len(got) != 2 || got[0].Package != "github.com/vllm-prober/vllm-prober/probe" || got[0].N != 7798636 {
		t.Fatalf("parsed %+v", got)
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for _, b := range got {
				if b.Name == tc.bench {
					if v, ok := b.Metrics[tc.unit]; !ok || v != tc.want {
						t.Errorf("%s %s = %v (%v), want %v", tc.bench, tc.unit, v, ok, tc.want)
					}
					return
				}
			}
			t.Errorf("%s not parsed", tc.bench)
		})
	}
}

func TestCompare(t *testing.T) {
	t0 := time.Now()
	at := func(ms float64) time.Time { return t0.Add(time.Duration(ms * float64(time.Millisecond))) }
	rec := simulator.TraceRecord{RequestID: "a", Arrival: at(1), Events: []simulator.TraceEvent{
		{Time: at(2), Kind: "role"}, {Time: at(21), Kind: "content", Tokens: 1}, {Time: at(33), Kind: "content", Tokens: 1},
		{Time: at(45), Kind: "content", Tokens: 1}, {Time: at(45.1), Kind: "usage"},
	}}
	good := &probe.Result{RequestID: "a", Disposition: probe.Accepted, Sent: at(0.9), Chunks: 3,
		TTFT: 20*time.Millisecond + 300*time.Microsecond, ITLs: []time.Duration{12*time.Millisecond - 100*time.Microsecond, 12 * time.Millisecond}}
	tests := []struct {
		name    string
		results []*probe.Result
		wantErr string
		check   func(t *testing.T, f FidelityResult)
	}{
		{name: "errors", results: []*probe.Result{good, {RequestID: "b", Disposition: probe.ServerFailure}}, check: func(t *testing.T, f FidelityResult) {
			// client TTFT 20.3 ms vs server 21 - 1 = 20 ms; trip 0.1 ms.
			if f.Requests != 1 || f.Skipped != 1 || f.TTFT.Max != 300*time.Microsecond || f.Trip.Max != 100*time.Microsecond ||
				f.Delivery.Max != 200*time.Microsecond || f.ITL.N != 2 || f.ITL.Max != 100*time.Microsecond || f.ITL.P50 != 0 {
				t.Errorf("got %+v", f)
			}
		}},
		{name: "untraced", results: []*probe.Result{{RequestID: "x", Disposition: probe.Accepted}}, wantErr: "no trace record"},
		{name: "event count differs", results: []*probe.Result{{RequestID: "a", Disposition: probe.Accepted, Chunks: 4}}, wantErr: "server wrote 3 token events, client saw 4"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, err := compare(tc.results, map[string]simulator.TraceRecord{"a": rec})
			if resultWanted(t, err, tc.wantErr) {
				tc.check(t, f)
			}
		})
	}
}

// TestCostConfig checks that the cost run's configuration loads and pairs
// every target with every probe.
func TestCostConfig(t *testing.T) {
	tests := []struct{ targets, probes, tokens int }{{1, 1, 64}, {1, 1, 16}, {10, 3, 64}}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("%d×%d, %d tokens", tc.targets, tc.probes, tc.tokens), func(t *testing.T) {
			cfg := loadConfigText(t, costConfig("http://127.0.0.1:8000", filepath.Join(t.TempDir(), "ledger.jsonl"),
				CostOptions{Targets: tc.targets, Probes: tc.probes, Rate: 1, OutputTokens: tc.tokens}))
			pairs := 0
			for _, tg := range cfg.Targets {
				pairs += len(cfg.ProbesFor(tg))
			}
			if len(cfg.Targets) != tc.targets || pairs != tc.targets*tc.probes || cfg.Global.Ledger.Path == "" {
				t.Errorf("%d targets, %d pairs, ledger %q", len(cfg.Targets), pairs, cfg.Global.Ledger.Path)
			}
			if w := cfg.Probes[0].Workload.Random; w == nil || w.OutputTokens != tc.tokens || cfg.Probes[0].SLO.TTFT == 0 {
				t.Errorf("first probe %+v, want a random workload of %d output tokens and SLOs", cfg.Probes[0], tc.tokens)
			}
		})
	}
}

// TestRuns runs the fidelity and schedule measurements briefly; it checks
// that they measure something, never how fast.
func TestRuns(t *testing.T) {
	tests := []struct {
		name string
		run  func() (int, error)
	}{
		{"fidelity", func() (int, error) {
			f, err := Fidelity(t.Context(), 20, 500*time.Millisecond, 4)
			if f.ITL.N != 3*f.Requests || f.TTFT.N != f.Requests {
				t.Errorf("%d requests, %d TTFT and %d ITL samples", f.Requests, f.TTFT.N, f.ITL.N)
			}
			return f.Requests, err
		}},
		{"schedule", func() (int, error) {
			s, err := Schedule(t.Context(), 100, 200*time.Millisecond)
			if s.Failed != 0 || s.SchedulerLag.N == 0 {
				t.Errorf("%d failed, %d scheduler-only samples", s.Failed, s.SchedulerLag.N)
			}
			return s.Lag.N, err
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			n, err := tc.run()
			if err != nil || n == 0 {
				t.Fatalf("%d samples, %v", n, err)
			}
		})
	}
}

// TestFloorClientCounted: the cost part's naive client sends to the
// simulator until stopped, and the simulator's finished-request counter,
// which FloorCost reads as the client's requests, counts them.
func TestFloorClientCounted(t *testing.T) {
	sim, url, err := startSimulator(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer sim.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 500*time.Millisecond)
	defer cancel()
	if err := naive.Serve(ctx, url, 40, 4); err != nil {
		t.Fatal(err)
	}
	n, _, err := requestsTotal(url+"/metrics", simulatorRequests, "")
	if err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		t.Fatal("the simulator counted no finished request of the naive client")
	}
	// The same count in whatever format Prometheus would get.
	for _, accept := range []string{AcceptOpenMetrics, AcceptProtobuf} {
		if got, _, err := requestsTotal(url+"/metrics", simulatorRequests, accept); err != nil || got != n {
			t.Errorf("asking %q: %v requests (%v), want %v", accept, got, err, n)
		}
	}
	// The daemon's counter is not the simulator's.
	if probe, _, err := requestsTotal(url+"/metrics", probeRequests, ""); err != nil || probe != 0 {
		t.Errorf("%s in the simulator's metrics: %v, %v", probeRequests, probe, err)
	}
}

// TestMeasureScrapesWarmup: the daemon is scraped through the warm-up as
// through the window, in the format asked for, and not at all when no
// scrapes are asked for; the requests are counted at the window's ends.
func TestMeasureScrapesWarmup(t *testing.T) {
	for _, every := range []time.Duration{0, 10 * time.Millisecond} {
		var beforeStart, total int
		var accepts []string
		var out CostResult
		out.DaemonPID = os.Getpid()
		count := func(accept string) (float64, int, error) {
			total++
			if out.Start.IsZero() {
				beforeStart++
			}
			accepts = append(accepts, accept)
			return float64(total), 1, nil
		}
		opts := CostOptions{Warmup: time.Second, Duration: 50 * time.Millisecond, ScrapeEvery: every, Accept: AcceptProtobuf}
		if err := measureCounting(t.Context(), &out, count, opts); err != nil {
			t.Fatal(err)
		}
		// The count before the window is taken before its start is set.
		warmupScrapes := beforeStart - 1
		if every == 0 && (warmupScrapes != 0 || total != 2) {
			t.Errorf("no scrapes asked for: %d in the warm-up, %d counts in all, want 0 and 2", warmupScrapes, total)
		}
		if every > 0 && warmupScrapes == 0 {
			t.Errorf("scraped every %v: no scrape in the warm-up of %v", every, opts.Warmup)
		}
		for i, a := range accepts[:len(accepts)-1] {
			if a != opts.Accept {
				t.Errorf("count %d asked %q, want the scrapes' %q", i, a, opts.Accept)
			}
		}
		if last := accepts[len(accepts)-1]; last != "" {
			t.Errorf("the last count asked %q, want the text format", last)
		}
		if out.Requests != float64(total-beforeStart) {
			t.Errorf("requests %v, want %d (the counts from the window's start to its end)", out.Requests, total-beforeStart)
		}
	}
}
