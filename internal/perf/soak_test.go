package perf

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/vllm-prober/vllm-prober/config"
)

// TestSoakChurn checks that the soak's configuration loads with the lean
// series budget and that a rotation renames exactly the oldest target and
// probe, so their pairs go and as many new ones come.
func TestSoakChurn(t *testing.T) {
	c := newChurn(t.TempDir(), []string{"127.0.0.1:1001", "127.0.0.1:1002", "127.0.0.1:1003"},
		SoakOptions{Targets: 3, Probes: 2, Rate: 0.05, ChurnTargets: 1, ChurnProbes: 1})
	before := soakPairs(t, loadConfigText(t, c.config()))
	c.rotate()
	after := soakPairs(t, loadConfigText(t, c.config()))
	want := []string{"t-00002/p-0002", "t-00002/p-0003", "t-00003/p-0002", "t-00003/p-0003", "t-00004/p-0002", "t-00004/p-0003"}
	if len(before) != 6 || !slices.Equal(after, want) {
		t.Errorf("pairs before %q, after %q, want %q", before, after, want)
	}
	c.rotate()
	c.rotate()
	want = []string{"t-00004/p-0004", "t-00004/p-0005", "t-00005/p-0004", "t-00005/p-0005", "t-00006/p-0004", "t-00006/p-0005"}
	if got := soakPairs(t, loadConfigText(t, c.config())); !slices.Equal(got, want) {
		t.Errorf("after three rotations: %q, want %q", got, want)
	}
}

// soakPairs returns cfg's pairs as target/probe, sorted, and checks each
// probe's series budget.
func soakPairs(t *testing.T, cfg *config.Config) []string {
	t.Helper()
	var pairs []string
	for _, tg := range cfg.Targets {
		for _, p := range cfg.ProbesFor(tg) {
			if sel := p.HistogramSelection(); p.Rate != 0.05 || sel.Classic || !slices.Equal(sel.Names, config.LeanHistograms) {
				t.Errorf("probe %s: rate %g, histograms %+v", p.Name, p.Rate, sel)
			}
			pairs = append(pairs, tg.Name+"/"+p.Name)
		}
	}
	if cfg.Global.Ledger.Path == "" || cfg.Global.Ledger.MaxSizeMB == 0 {
		t.Errorf("ledger %+v", cfg.Global.Ledger)
	}
	slices.Sort(pairs)
	return pairs
}

// TestSoakWindows judges hand-made samples: RSS that levels off after
// the first window is flat, RSS that keeps growing by 14% is not.
func TestSoakWindows(t *testing.T) {
	const mb = 1 << 20
	tests := []struct {
		name      string
		rss       []int64 // MiB, one sample per 10 s over 60 s
		wantMax   []int64 // MiB per window
		wantFlat  bool
		wantGrowF float64
	}{
		{"flat after the first window", []int64{50, 90, 100, 98, 104, 101}, []int64{90, 100, 104}, true, 0.04},
		{"growing", []int64{50, 90, 100, 105, 118, 120}, []int64{90, 105, 120}, false, 120.0/105 - 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var samples []SoakSample
			for i, r := range tc.rss {
				samples = append(samples, SoakSample{At: time.Duration(i+1)*10*time.Second - time.Second, RSS: r * mb,
					CPU: time.Duration(i) * time.Second, Goroutines: 10 + i, Series: 100, Reloads: i})
			}
			w := soakWindows(samples, time.Minute, 3)
			var got []int64
			for _, x := range w {
				got = append(got, x.MaxRSS/mb)
				if x.Samples != 2 || x.End-x.Start != 20*time.Second {
					t.Errorf("window %s–%s: %d samples", x.Start, x.End, x.Samples)
				}
			}
			if !slices.Equal(got, tc.wantMax) {
				t.Errorf("max RSS per window %v MiB, want %v", got, tc.wantMax)
			}
			// One second of CPU per 10 s sample: 5% of a core, counted
			// from the second sample of the run on.
			if w[1].CorePercent != 10 || w[1].ReloadsInWindow != 2 || w[2].MaxGoroutines != 15 || w[0].MinRSS != 50*mb {
				t.Errorf("second window %+v, last %+v, first %+v", w[1], w[2], w[0])
			}
			growth, flat := soakVerdict(w)
			if flat != tc.wantFlat || growth-tc.wantGrowF > 1e-9 || tc.wantGrowF-growth > 1e-9 {
				t.Errorf("growth %.4f, flat %v, want %.4f, %v", growth, flat, tc.wantGrowF, tc.wantFlat)
			}
		})
	}
}

// TestSampleSoak reads this process's RSS and a served exposition's
// goroutines and sample lines.
func TestSampleSoak(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, "# HELP go_goroutines Number of goroutines.\n# TYPE go_goroutines gauge\ngo_goroutines 42\n"+
			"# TYPE x_total counter\nx_total{a=\"1\"} 3\nx_total{a=\"2\"} 4\n")
	}))
	defer srv.Close()
	s, err := sampleSoak(os.Getpid(), srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	if s.Goroutines != 42 || s.Series != 3 || s.RSS == 0 || s.CPU == 0 {
		t.Errorf("%+v", s)
	}
}
