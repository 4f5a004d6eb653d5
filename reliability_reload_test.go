package main

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/vllm-prober/vllm-prober/collector/metricname"
	"github.com/vllm-prober/vllm-prober/config"
	"github.com/vllm-prober/vllm-prober/internal/daemontest"
	"github.com/vllm-prober/vllm-prober/internal/promtext"
	"github.com/vllm-prober/vllm-prober/probe/ledger"
	"github.com/vllm-prober/vllm-prober/probe/ledger/ledgertest"
	"github.com/vllm-prober/vllm-prober/simulator"
)

// reloadConfig renders the config of one step: "stable" runs "fixed"
// (never changes) and "varying" (its rate changes), "extra" runs "fixed"
// when present.
func reloadConfig(simURL, ledger string, varyingRate float64, withExtra bool) string {
	extra := ""
	if withExtra {
		extra = fmt.Sprintf("  - name: extra\n    url: %s\n    model: sim-llama\n    probes: [fixed]\n", simURL)
	}
	return fmt.Sprintf(`global:
  ledger: {path: %q}
  server_metrics: {interval: 1s, timeout: 1s}
targets:
  - name: stable
    url: %s
    model: sim-llama
%sprobes:
  - name: fixed
    api: chat
    rate: 8
    timeout: 5s
    workload:
      prompts:
        - messages: [{role: user, content: "What is 12*12? Digits only."}]
          expect: {regex: '\b144\b'}
  - name: varying
    api: completions
    rate: %g
    timeout: 5s
    workload: {random: {input_tokens: 16, output_tokens: 4}}
`, ledger, simURL, extra, varyingRate)
}

// reloadStep is what one reload does.
type reloadStep struct {
	kind      string // unchanged, rate, extra, invalid
	rate      float64
	withExtra bool
}

// reloadSteps lists 100 reloads: unchanged rewrites, changed rates, the
// extra target added and removed, and one invalid file.
func reloadSteps() []reloadStep {
	var steps []reloadStep
	rate, extra := 6.0, false
	for i := range 100 {
		s := reloadStep{kind: "unchanged"}
		switch {
		case i == 50:
			s.kind = "invalid"
		case i%7 == 3:
			extra = !extra
			s.kind = "extra"
		case i%3 == 1:
			rate = 4 + float64(i%5)
			s.kind = "rate"
		}
		s.rate, s.withExtra = rate, extra
		steps = append(steps, s)
	}
	return steps
}

// seriesState is what one scrape says about the pairs.
type seriesState struct {
	ttftCount map[string]uint64 // sample count of the TTFT histogram
	targets   map[string]bool   // targets with vllm_probe_* series
	reloadOK  float64
}

func scrapeState(t *testing.T, d *daemon) seriesState {
	t.Helper()
	fams, err := d.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	st := seriesState{ttftCount: map[string]uint64{}, targets: map[string]bool{}}
	for _, f := range fams {
		for _, m := range f.GetMetric() {
			l := promtext.Labels(m)
			target, probeName := l["target"], l["probe"]
			if strings.HasPrefix(f.GetName(), "vllm_probe_") && probeName != "" {
				st.targets[target] = true
			}
			if f.GetName() == "vllm_probe_time_to_first_token_seconds" {
				st.ttftCount[target+"/"+probeName] = m.GetHistogram().GetSampleCount()
			}
			if f.GetName() == "vllm_prober_config_last_reload_successful" {
				st.reloadOK = m.GetGauge().GetValue()
			}
		}
	}
	return st
}

// TestReloadUnderLoad runs the daemon in-process at about 20 requests/s
// and reloads it 100 times: unchanged probes keep their histograms, the
// removed target's series disappear once its last requests ended, the invalid file keeps the running
// config, and no request is lost or counted twice.
func TestReloadUnderLoad(t *testing.T) {
	simURL := relSim(t, simulator.Faults{})
	dir := t.TempDir()
	cfgPath, ledger := filepath.Join(dir, "c.yml"), filepath.Join(dir, "ledger.jsonl")
	write := func(s reloadStep) {
		body := reloadConfig(simURL, ledger, s.rate, s.withExtra)
		if s.kind == "invalid" {
			body = strings.Replace(body, "rate: 8", "rate: -8", 1)
		}
		if err := os.WriteFile(cfgPath, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(reloadStep{rate: 6})
	d := startInProcess(t, cfgPath)

	prev := scrapeState(t, d)
	for i, s := range reloadSteps() {
		time.Sleep(120 * time.Millisecond)
		write(s)
		running := d.safe.Get()
		err := d.reload()
		cur := scrapeState(t, d)
		// A removed pair's series go once its requests in flight have
		// ended and been counted (docs/design.md, Pair lifecycle).
		for deadline := time.Now().Add(10 * time.Second); cur.targets["extra"] && !s.withExtra && time.Now().Before(deadline); {
			time.Sleep(20 * time.Millisecond)
			cur = scrapeState(t, d)
		}
		checkReloadStep(t, i, s, err, running, d, prev, cur)
		prev = cur
	}
	d.shutdown()
	d.closeLedger()
	checkReloadLedger(t, d, ledger)
}

func checkReloadStep(t *testing.T, i int, s reloadStep, err error, running *config.Config, d *daemon, prev, cur seriesState) {
	t.Helper()
	if s.kind == "invalid" {
		if err == nil || d.safe.Get() != running || cur.reloadOK != 0 {
			t.Errorf("step %d: invalid reload: err %v, config kept %v, reload gauge %g", i, err, d.safe.Get() == running, cur.reloadOK)
		}
	} else if err != nil || cur.reloadOK != 1 {
		t.Errorf("step %d (%s): reload: %v, gauge %g", i, s.kind, err, cur.reloadOK)
	}
	for _, key := range []string{"stable/fixed", "extra/fixed"} {
		if cur.ttftCount[key] < prev.ttftCount[key] && (key != "extra/fixed" || s.kind != "extra") {
			t.Errorf("step %d (%s): %s TTFT sample count went from %d to %d", i, s.kind, key, prev.ttftCount[key], cur.ttftCount[key])
		}
	}
	if cur.targets["extra"] != s.withExtra {
		t.Errorf("step %d (%s): extra target configured %v, has series %v", i, s.kind, s.withExtra, cur.targets["extra"])
	}
	for _, ps := range d.tracker.Snapshot() {
		if ps.InFlight < 0 {
			t.Errorf("step %d: status page shows %d in flight for %s/%s", i, ps.InFlight, ps.Target, ps.Probe)
		}
	}
}

// checkReloadLedger: per pair the ledger seqs are 1..n, and for the pairs
// never removed the counters equal the ledger per disposition.
func checkReloadLedger(t *testing.T, d *daemon, ledgerPath string) {
	t.Helper()
	recs, seqs := readLedgerSeqs(t, ledgerPath)
	byDisp := map[string]float64{}
	for _, r := range recs {
		byDisp[r.Target+"/"+r.Probe+" "+string(r.Disposition)]++
	}
	fams, err := d.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() != "vllm_probe_requests_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			l := promtext.Labels(m)
			key := l["target"] + "/" + l["probe"] + " " + l["disposition"]
			if strings.HasPrefix(key, "stable/") && m.GetCounter().GetValue() != byDisp[key] {
				t.Errorf("%s: counter %g, ledger %g", key, m.GetCounter().GetValue(), byDisp[key])
			}
		}
	}
	if len(seqs["stable/fixed"]) < 80 || len(seqs["extra/fixed"]) == 0 {
		t.Errorf("too few requests: %d stable/fixed, %d extra/fixed", len(seqs["stable/fixed"]), len(seqs["extra/fixed"]))
	}
}

// readLedgerSeqs reads the ledger at path, checks that every pair's seqs
// are 1..n, and returns the records and the seqs by pair
// (config.PairKey.String).
func readLedgerSeqs(t *testing.T, path string) ([]ledger.Record, map[string][]uint64) {
	t.Helper()
	recs := ledgertest.Read(t, path)
	seqs := map[string][]uint64{}
	for _, r := range recs {
		key := config.PairKey{Target: r.Target, Probe: r.Probe, Replica: r.Replica}.String()
		seqs[key] = append(seqs[key], r.Seq)
	}
	for key, s := range seqs {
		slices.Sort(s)
		for i, v := range s {
			if v != uint64(i+1) {
				t.Errorf("%s: ledger seqs are not 1..%d: position %d holds %d", key, len(s), i, v)
				break
			}
		}
	}
	return recs, seqs
}

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

// replaceFile swaps path for a FIFO or a symlink to /dev/zero.
func replaceFile(t *testing.T, path, kind string) {
	t.Helper()
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	var err error
	if kind == "fifo" {
		err = syscall.Mkfifo(path, 0o600)
	} else {
		err = os.Symlink("/dev/zero", path)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// runBounded is runBinary for a command that might hang: it is killed
// after 30 seconds (exit code -1).
func runBounded(t *testing.T, args ...string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	code, out, err := daemontest.Output(exec.CommandContext(ctx, binary, args...))
	if err != nil {
		t.Fatalf("run %v: %v", args, err)
	}
	return code, out
}

// sighup sends SIGHUP to the daemon.
func sighup(t *testing.T, d *daemontest.Proc) {
	t.Helper()
	if err := d.Cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
}

// TestHostileConfigFile swaps the config file of a running daemon for a
// FIFO and for a symlink to /dev/zero: each SIGHUP fails with a message
// naming the file instead of hanging the signal loop or reading without
// bound, --config.check says the same, and SIGTERM right after a SIGHUP
// still stops the process.
func TestHostileConfigFile(t *testing.T) {
	simURL := startSimulator(t)
	dir := t.TempDir()
	cfgPath := writeChatConfig(t, dir, simURL, 2, "")
	d := startDaemon(t, "--config.file="+cfgPath)

	for _, tc := range []struct{ kind, want string }{
		{"fifo", "c.yml: not a regular file (a FIFO)"},
		{"zero", "c.yml: not a regular file (a character device)"},
	} {
		replaceFile(t, cfgPath, tc.kind)
		code, out := runBounded(t, "--config.file="+cfgPath, "--config.check")
		if code != 1 || !strings.Contains(out, tc.want) {
			t.Errorf("--config.check of a %s: exit %d, want 1 and %q:\n%s", tc.kind, code, tc.want, out)
		}
		before := strings.Count(d.Logs(), "Error reloading config")
		sighup(t, d)
		waitFor(t, "the reload of a "+tc.kind+" to fail", func() bool {
			return strings.Count(d.Logs(), "Error reloading config") > before
		})
		if logs := d.Logs(); !strings.Contains(logs, tc.want) {
			t.Errorf("reload error does not say %q:\n%s", tc.want, logs)
		}
		if !metricsContain(t, d, "vllm_prober_config_last_reload_successful 0") {
			t.Errorf("failed reload of a %s not shown in the metrics", tc.kind)
		}
	}

	replaceFile(t, cfgPath, "fifo")
	sighup(t, d)
	if err := d.Stop(t, syscall.SIGTERM); err != nil {
		t.Errorf("daemon exit after SIGHUP then SIGTERM: %v", err)
	}
}

// TestUnchangedReloadLogsAtDebug reloads an unchanged config at the
// default log level: nothing is logged for it.
func TestUnchangedReloadLogsAtDebug(t *testing.T) {
	simURL := startSimulator(t)
	cfgPath := writeChatConfig(t, t.TempDir(), simURL, 2, "")
	d := startDaemon(t, "--config.file="+cfgPath, "--web.enable-lifecycle")
	for range 3 {
		if code, body := get(t, http.MethodPost, d.URL("/-/reload")); code != http.StatusOK {
			t.Fatalf("reload: %d %s", code, body)
		}
	}
	// A failed reload logs after them, so their lines would be read by now.
	if err := os.WriteFile(cfgPath, []byte("nonsense: 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, _ := get(t, http.MethodPost, d.URL("/-/reload")); code != http.StatusInternalServerError {
		t.Fatalf("reload of a bad config: %d, want 500", code)
	}
	waitFor(t, "the failed reload's log", func() bool { return strings.Contains(d.Logs(), "Error reloading config") })
	if logs := d.Logs(); strings.Contains(logs, "Config unchanged") {
		t.Errorf("unchanged reloads logged at info:\n%s", logs)
	}
}
