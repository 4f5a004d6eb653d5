//go:build e2e

package rules_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/vllm-prober/vllm-prober/collector"
	"github.com/vllm-prober/vllm-prober/config"
	"github.com/vllm-prober/vllm-prober/internal/daemontest"
	"github.com/vllm-prober/vllm-prober/probe"
	"github.com/vllm-prober/vllm-prober/rules"
	"github.com/vllm-prober/vllm-prober/rules/internal/rulestest"
)

// promQuery runs an instant query and returns its vector samples by the
// value of label.
func promQuery(base, query, label string) (map[string]float64, error) {
	resp, err := http.Get(base + "/api/v1/query?query=" + url.QueryEscape(query))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var r struct {
		Status string
		Error  string
		Data   struct {
			Result []struct {
				Metric map[string]string
				Value  [2]any
			}
		}
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		return nil, err
	}
	if r.Status != "success" {
		return nil, fmt.Errorf("query %s: %s", query, r.Error)
	}
	out := map[string]float64{}
	for _, s := range r.Data.Result {
		v, _ := strconv.ParseFloat(fmt.Sprint(s.Value[1]), 64)
		out[s.Metric[label]] = v
	}
	return out, nil
}

// TestNativeOnlyRulesInPrometheus: promtool 2.42 cannot feed native
// histograms to rule unit tests, so the native forms run in a real
// Prometheus with native histograms on, scraping (in protobuf, through
// collector.MetricsHandler as the daemon serves it) a collector whose lean
// probe exports TTFT and schedule lag native-only beside a probe with
// classic buckets. Ground truth: every lean request has a TTFT of 1.9s
// and a schedule lag of 1.5s, every full one a TTFT of 0.3s.
func TestNativeOnlyRulesInPrometheus(t *testing.T) {
	off := false
	lean := rulestest.Probe("lean", 10, 0.99, config.SLO{TTFT: rulestest.Sec(time.Second)})
	lean.Histograms, lean.ClassicBuckets = []string{config.HistogramTTFT, config.HistogramScheduleLag}, &off
	cfg := &config.Config{Targets: []config.Target{{Name: "a"}}, Probes: []config.Probe{lean, rulestest.Probe("full", 10, 0.99, config.SLO{TTFT: rulestest.Sec(time.Second)})}}

	c := collector.New(collector.Options{})
	for _, p := range cfg.Pairs() {
		c.PairStarted(p)
	}
	// Served as the daemon serves it: Prometheus with native histograms
	// asks for protobuf, written from the pairs' encoded series.
	h := collector.MetricsHandler(collector.Join(c), promhttp.HandlerOpts{DisableCompression: true, EnableOpenMetrics: true})
	var served atomic.Value // the Content-Type of the last answer
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r)
		served.Store(w.Header().Get("Content-Type"))
	}))
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		for tick := time.NewTicker(50 * time.Millisecond); ; {
			select {
			case <-ctx.Done():
				tick.Stop()
				return
			case now := <-tick.C:
				for _, r := range []probe.Result{
					{Target: "a", Probe: "lean", Disposition: probe.LatencyFailure, Sent: now, Lag: 1500 * time.Millisecond, TTFT: 1900 * time.Millisecond, E2EL: 2 * time.Second},
					{Target: "a", Probe: "full", Disposition: probe.Accepted, Sent: now, TTFT: 300 * time.Millisecond, E2EL: time.Second},
				} {
					c.Offered(config.PairKey{Target: r.Target, Probe: r.Probe})
					c.Finished(&r)
				}
			}
		}
	}()

	o := rules.Options{WindowScale: 1.0 / 60, MinLatencySamples: 1}
	rf, _, err := rules.Generate(cfg, o)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	base := runPrometheus(t, dir, rf, srv.Listener.Addr().String(), "--enable-feature=native-histograms")

	latency, ok := alertExpr(rf, rules.AlertLatencyHigh, "lean")
	if !ok {
		t.Fatalf("no latency alert for the lean probe")
	}
	lag, _ := alertExpr(rf, rules.AlertScheduleLag, "")
	checks := []struct {
		name, query, label, key string
		lo, hi                  float64
	}{
		// Native buckets of schema 3 (collector's factor 1.1) have bounds
		// 2^(k/8): 1.9s is in (2^(7/8), 2], 1.5s in (2^(4/8), 2^(5/8)].
		{"lean p99 TTFT, native only", latency, "probe", "lean", 1.834, 2},
		{"lean p99 schedule lag, native only", lag, "probe", "lean", 1.414, 1.543},
		{"client p50 TTFT of the target over both probes", rules.RecordClientTTFT + "10s", "target", "a", 0.25, 1.95},
		{"the lean alert is pending or firing", `count by (probe) (ALERTS{alertname="` + rules.AlertLatencyHigh + `",probe="lean"})`, "probe", "lean", 1, 1},
	}
	deadline := time.Now().Add(90 * time.Second)
	for _, ch := range checks {
		var got map[string]float64
		for {
			got, err = promQuery(base, ch.query, ch.label)
			if v, ok := got[ch.key]; err == nil && ok && v >= ch.lo && v <= ch.hi {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: %s = %v (err %v), want %s in [%g, %g]\nprometheus:\n%s", ch.name, ch.query, got, err, ch.key, ch.lo, ch.hi, promLog(dir))
			}
			time.Sleep(time.Second)
		}
	}
	// Prometheus stored native histograms, not classic buckets: the
	// classic forms had nothing to read.
	if got, err := promQuery(base, `count by (job) ({__name__=~"vllm_probe_.*_bucket"})`, "job"); err != nil || len(got) != 0 {
		t.Errorf("classic bucket series stored: %v (err %v)", got, err)
	}
	if ct, _ := served.Load().(string); !strings.HasPrefix(ct, "application/vnd.google.protobuf") {
		t.Errorf("Prometheus was answered %q, want protobuf", ct)
	}
}

// runPrometheus writes rf and a configuration that scrapes target every
// second as job vllm-prober into dir, starts Prometheus there with flags,
// stops it at cleanup and returns its base URL.
func runPrometheus(t *testing.T, dir string, rf *rules.RuleFile, target string, flags ...string) string {
	t.Helper()
	promBin := daemontest.RequireTool(t, "prometheus")
	b, err := rules.Marshal(rf, nil)
	if err != nil {
		t.Fatal(err)
	}
	promCfg := fmt.Sprintf("global: {scrape_interval: 1s, evaluation_interval: 1s}\nrule_files: [rules.yml]\n"+
		"scrape_configs:\n  - job_name: vllm-prober\n    static_configs: [{targets: [%q]}]\n", target)
	for name, content := range map[string][]byte{"rules.yml": b, "prometheus.yml": []byte(promCfg)} {
		if err := os.WriteFile(filepath.Join(dir, name), content, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	logs, err := os.Create(filepath.Join(dir, "prometheus.log"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { logs.Close() })
	cmd := exec.Command(promBin, append([]string{"--config.file=" + filepath.Join(dir, "prometheus.yml"),
		"--storage.tsdb.path=" + filepath.Join(dir, "tsdb"), "--web.listen-address=" + addr}, flags...)...)
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return "http://" + addr
}

// alertExpr returns the expression of the alert for probe ("" = any).
func alertExpr(rf *rules.RuleFile, alert, probeName string) (string, bool) {
	for r := range rf.Rules() {
		if r.Alert == alert && (probeName == "" || r.Labels["probe"] == probeName) {
			return r.Expr, true
		}
	}
	return "", false
}

// promLog returns the end of Prometheus's log in dir.
func promLog(dir string) string {
	b, _ := os.ReadFile(filepath.Join(dir, "prometheus.log"))
	return string(b[max(0, len(b)-3000):])
}
