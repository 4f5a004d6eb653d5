package collector

import (
	"bufio"
	"fmt"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"

	"github.com/vllm-prober/vllm-prober/collector/metricname"
	"github.com/vllm-prober/vllm-prober/config"
	"github.com/vllm-prober/vllm-prober/internal/promtext"
	"github.com/vllm-prober/vllm-prober/probe"
)

// scrapePair scrapes /metrics of a registry holding only c over HTTP, in
// the text format (what a Prometheus without native histograms reads:
// one series per line), and returns the series and bytes of pair t/p.
func scrapePair(t *testing.T, c *Collector, target, probeName string) (series, size int) {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	defer srv.Close()
	body, _ := fetch(t, srv.URL, string(expfmt.NewFormat(expfmt.TypeTextPlain)))
	pr, tg := fmt.Sprintf("probe=%q", probeName), fmt.Sprintf("target=%q", target)
	sc := bufio.NewScanner(strings.NewReader(body))
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "#") && hasLabel(line, pr) && hasLabel(line, tg) {
			series++
			size += len(line) + 1
		}
	}
	return series, size
}

// hasLabel reports whether a sample line has the label pair name="value".
func hasLabel(line, pair string) bool {
	return strings.Contains(line, "{"+pair) || strings.Contains(line, ","+pair)
}

// TestSeriesPerPair pins the /metrics series of one pair for each
// histogram selection (docs/design.md, Series budget, quotes these
// numbers), measured after a request that fed every histogram. Full mode
// is what every pair exported before the selection existed; the lean set
// stays within the budget of 60.
func TestSeriesPerPair(t *testing.T) {
	type selection struct {
		name       string
		histograms []string
		native     bool
		want       int
	}
	tests := []selection{
		{"full (default)", nil, false, 366},
		{"full native-only", config.Histograms, true, 85},
		{"lean: ttft, e2el native-only", []string{config.HistogramTTFT, config.HistogramE2EL}, true, 49},
		{"ttft, e2el", []string{config.HistogramTTFT, config.HistogramE2EL}, false, 93},
		{"ttft, itl, e2el", []string{config.HistogramTTFT, config.HistogramITL, config.HistogramE2EL}, false, 115},
		{"ttft, itl, e2el native-only", []string{config.HistogramTTFT, config.HistogramITL, config.HistogramE2EL}, true, 52},
	}
	// One histogram alone: the 43 counters and the gauge plus its series.
	alone := map[string][2]int{
		config.HistogramTTFT: {69, 46}, config.HistogramITL: {65, 46}, config.HistogramTPOT: {65, 46},
		config.HistogramE2EL: {67, 46}, config.HistogramTTFA: {68, 46}, config.HistogramPhases: {175, 61},
		config.HistogramScheduleLag: {65, 46}, config.HistogramServer: {93, 49},
	}
	for _, h := range config.Histograms {
		tests = append(tests, selection{h, []string{h}, false, alone[h][0]}, selection{h + " native-only", []string{h}, true, alone[h][1]})
	}
	off := false
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := config.Probe{Name: "p", API: config.APIChat, Rate: 1, SLO: config.SLO{TTFT: dur("300ms"), TPOT: dur("50ms"), E2EL: dur("5s")}, Histograms: tc.histograms}
			if tc.native {
				p.ClassicBuckets = &off
			}
			cfg := &config.Config{Probes: []config.Probe{p}, Targets: []config.Target{{Name: "t", URL: "http://127.0.0.1:1"}}}
			c := New(Options{Now: clock})
			syncPairs(c, cfg)
			finish(c, &probe.Result{
				Target: "t", Probe: "p", RequestID: "r", Disposition: probe.Accepted, Sent: fixedNow,
				TTFT: 400 * time.Millisecond, TTFA: 700 * time.Millisecond, TPOT: 20 * time.Millisecond, E2EL: time.Second, ITLs: []time.Duration{10 * time.Millisecond}, ReasoningTokens: 3,
				Phases: probe.PhaseTimes{probe.PhaseHeaders: 5 * time.Millisecond, probe.PhaseDecode: 600 * time.Millisecond},
				Server: &probe.ServerTiming{TTFT: 350 * time.Millisecond},
			})
			n, size := scrapePair(t, c, "t", "p")
			t.Logf("%d series, %d bytes", n, size)
			if n != tc.want {
				t.Errorf("%d series for the pair, want %d", n, tc.want)
			}
		})
	}
}

// TestCollectorSelectionChanges: a pair whose histogram selection changes
// gets new histograms (as a changed SLO threshold does); an unchanged one
// keeps its observations; native-only histograms carry no classic bucket.
func TestCollectorSelectionChanges(t *testing.T) {
	off := false
	cfg := func(histograms []string, classic *bool) *config.Config {
		return &config.Config{
			Probes:  []config.Probe{{Name: "p", API: config.APIChat, Rate: 1, Histograms: histograms, ClassicBuckets: classic}},
			Targets: []config.Target{{Name: "t", URL: "http://127.0.0.1:1"}},
		}
	}
	c := New(Options{Now: clock})
	accepted := func() {
		finish(c, &probe.Result{Target: "t", Probe: "p", Disposition: probe.Accepted, Sent: fixedNow, TTFT: time.Second / 2, E2EL: time.Second})
	}
	ttftCount := func() uint64 {
		return promtext.Series(t, promtext.Gather(t, c), metricname.TTFT).GetHistogram().GetSampleCount()
	}
	syncPairs(c, cfg([]string{config.HistogramTTFT}, nil))
	accepted()
	if _, ok := promtext.Gather(t, c)[metricname.E2EL]; ok {
		t.Errorf("e2el exported though the probe selected only ttft")
	}
	syncPairs(c, cfg([]string{config.HistogramTTFT}, nil))
	if got := ttftCount(); got != 1 {
		t.Errorf("unchanged selection: ttft count %d, want 1 (kept)", got)
	}
	syncPairs(c, cfg([]string{config.HistogramTTFT, config.HistogramE2EL}, nil))
	if got := ttftCount(); got != 0 {
		t.Errorf("changed selection: ttft count %d, want 0 (new histograms)", got)
	}
	accepted()
	syncPairs(c, cfg([]string{config.HistogramTTFT, config.HistogramE2EL}, &off))
	accepted()
	mfs := promtext.Gather(t, c)
	for _, name := range []string{metricname.TTFT, metricname.E2EL} {
		h := promtext.Series(t, mfs, name).GetHistogram()
		if h.GetSampleCount() != 1 || len(h.GetBucket()) != 0 || h.Schema == nil {
			t.Errorf("%s after classic_buckets: false: count %d, %d classic buckets, schema %v; want 1, 0, native", name, h.GetSampleCount(), len(h.GetBucket()), h.Schema)
		}
	}
	if got := promtext.CounterValue(t, c, metricname.Requests, "disposition", "accepted"); got != 3 {
		t.Errorf("accepted counter %v, want 3: counters stay through selection changes", got)
	}
}

// TestSelectedBy: each `histograms:` name alone exports exactly the
// families metricname.SelectedBy maps to it, so rules and dashboards that
// read the map know what a probe left out.
func TestSelectedBy(t *testing.T) {
	for _, name := range config.Histograms {
		t.Run(name, func(t *testing.T) {
			c := New(Options{Now: clock})
			syncPairs(c, &config.Config{
				Probes:  []config.Probe{{Name: "p", API: config.APIChat, Rate: 1, Histograms: []string{name}}},
				Targets: []config.Target{{Name: "t", URL: "http://127.0.0.1:1"}},
			})
			var got, want []string
			for fam, mf := range promtext.Gather(t, c) {
				if mf.GetType() == dto.MetricType_HISTOGRAM {
					got = append(got, fam)
				}
			}
			for fam, sel := range metricname.SelectedBy {
				if sel == name {
					want = append(want, fam)
				}
			}
			slices.Sort(got)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Errorf("exports %v, metricname.SelectedBy says %v", got, want)
			}
		})
	}
}
