package perf

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vllm-prober/vllm-prober/config"
	"github.com/vllm-prober/vllm-prober/discovery"
	"github.com/vllm-prober/vllm-prober/internal/daemontest"
)

// TestFleetConfig checks that the fleet run's configuration loads and that
// its file_sd files make every replica address a pair with every probe.
func TestFleetConfig(t *testing.T) {
	for _, noServer := range []bool{false, true} {
		t.Run(fmt.Sprintf("no server metrics %v", noServer), func(t *testing.T) {
			cfg := loadFleetConfig(t, FleetOptions{Targets: 2, Replicas: 3, Probes: 2, Rate: 0.1, NoServerMetrics: noServer})
			replicas := map[string][]discovery.Replica{}
			for _, tg := range cfg.Targets {
				replicas[tg.Name] = discoverOnce(t, *tg.Discovery)
				if (tg.MetricsPath == "") != noServer {
					t.Errorf("target %s: metrics_path %q", tg.Name, tg.MetricsPath)
				}
			}
			pairs := cfg.PairsWith(replicas)
			var urls []string
			for _, p := range pairs {
				if p.Key.Replica == "" || p.Probe.Rate != 0.1 {
					t.Errorf("pair %s: rate %g", p.Key, p.Probe.Rate)
				}
				urls = append(urls, p.Target.URL)
			}
			slices.Sort(urls)
			if urls = slices.Compact(urls); len(pairs) != 12 || len(urls) != 6 {
				t.Errorf("%d pairs over %d replica URLs %q, want 12 over 6", len(pairs), len(urls), urls)
			}
		})
	}
}

// TestScaleConfig checks that the scale run's configuration loads into
// targets × probes static pairs, each on its own address, in lean mode
// (ttft and e2el, native only), with or without server metrics.
func TestScaleConfig(t *testing.T) {
	for _, noServer := range []bool{false, true} {
		t.Run(fmt.Sprintf("no server metrics %v", noServer), func(t *testing.T) {
			dir := t.TempDir()
			addrs := []string{"127.0.0.1:1001", "127.0.0.1:1002", "127.0.0.1:1003"}
			cfg := loadConfigText(t, scaleConfig(dir, addrs, ScaleOptions{Targets: 3, Probes: 4, Rate: 0.05, NoServerMetrics: noServer}))
			pairs := cfg.Pairs()
			var urls []string
			for _, p := range pairs {
				sel := p.Probe.HistogramSelection()
				if p.Probe.Rate != 0.05 || sel.Classic || !slices.Equal(sel.Names, config.LeanHistograms) {
					t.Errorf("pair %s: rate %g, histograms %v", p.Key, p.Probe.Rate, sel)
				}
				if (p.Target.MetricsPath == "") != noServer {
					t.Errorf("pair %s: metrics_path %q", p.Key, p.Target.MetricsPath)
				}
				urls = append(urls, p.Target.URL)
			}
			slices.Sort(urls)
			if urls = slices.Compact(urls); len(pairs) != 12 || len(urls) != 3 {
				t.Errorf("%d pairs over %d URLs %q, want 12 over 3", len(pairs), len(urls), urls)
			}
		})
	}
}

// loadFleetConfig writes the fleet run's config for six replica addresses
// and loads it.
func loadFleetConfig(t *testing.T, o FleetOptions) *config.Config {
	t.Helper()
	dir := t.TempDir()
	addrs := []string{"127.0.0.1:1001", "127.0.0.1:1002", "127.0.0.1:1003", "127.0.0.1:1004", "127.0.0.1:1005", "127.0.0.1:1006"}
	text, err := fleetConfig(dir, addrs, o)
	if err != nil {
		t.Fatal(err)
	}
	return loadConfigText(t, text)
}

// loadConfigText writes a daemon configuration to a file and loads it as
// the daemon does.
func loadConfigText(t *testing.T, text string) *config.Config {
	t.Helper()
	path := filepath.Join(t.TempDir(), daemonConfigFile)
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatalf("%v\n%s", err, text)
	}
	return cfg
}

// discoverOnce returns the first set c's discoverer reports.
func discoverOnce(t *testing.T, c discovery.Config) []discovery.Replica {
	t.Helper()
	d, err := discovery.New(c, discovery.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var got []discovery.Replica
	d.Run(ctx, func(r []discovery.Replica) { got = r; cancel() }, func(err error) { t.Error(err); cancel() }, func() {})
	return got
}

// TestCountSeries counts a hand-written exposition: a histogram is one
// series per bucket (+Inf included) plus _sum and _count, and only
// vllm_probe_* series of a pair (static, gateway or replica) count per
// pair; series of other families with a target label are server series.
func TestCountSeries(t *testing.T) {
	body := `# TYPE vllm_probe_ttft_seconds histogram
vllm_probe_ttft_seconds_bucket{target="a",probe="p",replica="r1",le="0.1"} 1
vllm_probe_ttft_seconds_bucket{target="a",probe="p",replica="r1",le="+Inf"} 2
vllm_probe_ttft_seconds_sum{target="a",probe="p",replica="r1"} 0.3
vllm_probe_ttft_seconds_count{target="a",probe="p",replica="r1"} 2
vllm_probe_ttft_seconds_bucket{target="a",probe="p",replica="",le="0.1"} 1
vllm_probe_ttft_seconds_bucket{target="a",probe="p",replica="",le="+Inf"} 2
vllm_probe_ttft_seconds_sum{target="a",probe="p",replica=""} 0.3
vllm_probe_ttft_seconds_count{target="a",probe="p",replica=""} 2
# TYPE vllm_probe_requests_total counter
vllm_probe_requests_total{target="a",probe="p",replica="r1"} 2
vllm_probe_requests_total{target="a",probe="q",replica="r2"} 1
# TYPE vllm_probe_target_info gauge
vllm_probe_target_info{target="a",replica="r3"} 1
# TYPE vllm_prober_discovery_replicas gauge
vllm_prober_discovery_replicas{target="a"} 3
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{target="a",replica="r1"} 0
vllm:num_requests_running{target="a"} 0
`
	var out FleetResult
	if err := countSeries(&out, []byte(body)); err != nil {
		t.Fatal(err)
	}
	// Pair series: r1/p 4+1, the gateway's p 4, r2/q 1.
	if out.Series != 14 || out.Pairs != 3 || out.Replicas != 3 || out.SeriesPerPair != 10.0/3 || out.ServerSeries != 2 {
		t.Errorf("series %d, pairs %d, replicas %d, per pair %g, server %d; want 14, 3, 3, 3.33, 2",
			out.Series, out.Pairs, out.Replicas, out.SeriesPerPair, out.ServerSeries)
	}
}

// TestScaleBeside runs two daemons of the built binary beside each other
// against the same servers: each is measured over the same window (its
// own process, its requests counted from its own /metrics), and each
// answers its own fetches with the configuration's series, its scrapes
// and timed fetches in protobuf, as they asked.
func TestScaleBeside(t *testing.T) {
	bin, cleanup, err := daemontest.Build("../..")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cleanup)
	ours, theirs, err := ScaleBeside(t.Context(), ScaleOptions{Binary: bin, Targets: 2, Probes: 2, Rate: 4,
		Warmup: time.Second, Duration: 2 * time.Second, ScrapeEvery: 500 * time.Millisecond, Fetches: 2, NoServerMetrics: true,
		Accept: AcceptProtobuf}, bin)
	if err != nil {
		t.Fatal(err)
	}
	if ours.DaemonPID == theirs.DaemonPID {
		t.Errorf("both results are of process %d", ours.DaemonPID)
	}
	for _, r := range []FleetResult{ours, theirs} {
		if r.Requests <= 0 || r.CPU <= 0 || r.Pairs != 4 || r.Metrics.N != 2 || r.Status.N != 2 {
			t.Errorf("process %d: %v requests, CPU %v, %d pairs, %d and %d fetches", r.DaemonPID, r.Requests, r.CPU, r.Pairs,
				r.Metrics.N, r.Status.N)
		}
		if !strings.HasPrefix(r.MetricsType, "application/vnd.google.protobuf") || r.MetricsBytes == 0 {
			t.Errorf("process %d: timed /metrics answers %q, %d bytes, want protobuf", r.DaemonPID, r.MetricsType, r.MetricsBytes)
		}
		if d := r.Start.Sub(ours.Start); d.Abs() > time.Second || (r.Duration-ours.Duration).Abs() > time.Second {
			t.Errorf("process %d measured for %v from %v, the other for %v from %v", r.DaemonPID, r.Duration,
				r.Start.Format(time.StampMilli), ours.Duration, ours.Start.Format(time.StampMilli))
		}
	}
}
