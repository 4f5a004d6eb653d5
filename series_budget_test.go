package main

import (
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/vllm-prober/vllm-prober/collector/metricname"
	"github.com/vllm-prober/vllm-prober/config"
	"github.com/vllm-prober/vllm-prober/internal/daemontest"
	"github.com/vllm-prober/vllm-prober/internal/promtext"
	"github.com/vllm-prober/vllm-prober/simulator"
)

// startInProcess loads cfgPath and runs a daemon on it in this process,
// ready, with no HTTP server: tests gather d.reg and call d.reload.
func startInProcess(t *testing.T, cfgPath string) *daemon {
	t.Helper()
	return startInProcessLogged(t, cfgPath, slog.New(slog.DiscardHandler))
}

// startInProcessLogged is startInProcess with the daemon's logger.
func startInProcessLogged(t *testing.T, cfgPath string, logger *slog.Logger) *daemon {
	t.Helper()
	safe := &config.SafeConfig{}
	if _, err := safe.Reload(cfgPath); err != nil {
		t.Fatal(err)
	}
	d, err := newDaemon(logger, &daemonFlags{configFile: cfgPath, telemetryPath: "/metrics"}, safe, nil)
	if err != nil {
		t.Fatal(err)
	}
	d.applyMu.Lock() // discovery updates apply under it too
	err = d.apply(safe.Get())
	d.applyMu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	close(d.ready)
	return d
}

// TestReloadChangesHistogramSelection: a reload that changes a probe's
// histograms and classic_buckets restarts its pair's histograms with the
// new selection, native-only, and keeps its counters.
func TestReloadChangesHistogramSelection(t *testing.T) {
	simURL := relSim(t, simulator.Faults{})
	dir := t.TempDir()
	cfgPath := relConfig(t, dir, simURL, 20, "5s", filepath.Join(dir, "ledger.jsonl"))
	d := startInProcess(t, cfgPath)
	defer d.closeLedger()
	defer d.shutdown()

	gather := func() map[string]*dto.MetricFamily { return promtext.Families(t, d.reg) }
	ttft := func(fams map[string]*dto.MetricFamily) *dto.Histogram {
		if f := fams[metricname.TTFT]; f != nil && len(f.GetMetric()) == 1 {
			return f.GetMetric()[0].GetHistogram()
		}
		t.Fatalf("want one TTFT series, got %v", fams[metricname.TTFT])
		return nil
	}
	offered := func(fams map[string]*dto.MetricFamily) float64 {
		return fams[metricname.RequestsOffered].GetMetric()[0].GetCounter().GetValue()
	}
	daemontest.Poll(t, 20*time.Second, 50*time.Millisecond, "10 TTFT observations",
		func() bool { return ttft(gather()).GetSampleCount() >= 10 })
	before := gather()

	body, err := os.ReadFile(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	lean := strings.Replace(string(body), "    api: chat\n", "    api: chat\n    histograms: [ttft, e2el]\n    classic_buckets: false\n", 1)
	if err := os.WriteFile(cfgPath, []byte(lean), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := d.reload(); err != nil {
		t.Fatal(err)
	}
	after := gather()

	var hists []string
	for name, f := range after {
		if strings.HasPrefix(name, "vllm_probe_") && f.GetType() == dto.MetricType_HISTOGRAM {
			hists = append(hists, name)
		}
	}
	slices.Sort(hists)
	if want := []string{metricname.E2EL, metricname.TTFT}; !slices.Equal(hists, want) {
		t.Errorf("histograms after the reload %v, want %v", hists, want)
	}
	h, was := ttft(after), ttft(before)
	// A native-only histogram has no classic bucket; client_golang adds a
	// +Inf one only to carry an exemplar, when a request ended after the
	// reload.
	classic := 0
	for _, b := range h.GetBucket() {
		if !math.IsInf(b.GetUpperBound(), 1) {
			classic++
		}
	}
	if h.GetSampleCount() >= was.GetSampleCount() || classic != 0 || h.Schema == nil {
		t.Errorf("TTFT after the reload: count %d (was %d), %d classic buckets, schema %v; want restarted, none, native",
			h.GetSampleCount(), was.GetSampleCount(), classic, h.Schema)
	}
	if offered(after) < offered(before) {
		t.Errorf("offered fell from %v to %v: counters must stay", offered(before), offered(after))
	}
}
