package main

import (
	"context"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/vllm-prober/vllm-prober/internal/daemontest"
	"github.com/vllm-prober/vllm-prober/internal/designdoc"
	"github.com/vllm-prober/vllm-prober/internal/promtext"
	"github.com/vllm-prober/vllm-prober/probe"
	"github.com/vllm-prober/vllm-prober/probe/ledger/ledgertest"
	"github.com/vllm-prober/vllm-prober/status"
)

// sumBy sums a family's values per pair, "target/probe" or
// "target@replica/probe" (the demo's tables' form).
func sumBy(f *dto.MetricFamily) map[string]float64 {
	out := map[string]float64{}
	if f == nil {
		return out
	}
	for _, m := range f.GetMetric() {
		l := promtext.Labels(m)
		out[demoPair(l["target"], l["replica"], l["probe"])] += m.GetCounter().GetValue() + m.GetGauge().GetValue()
	}
	return out
}

// demoPair names a pair as the demo's tables do.
func demoPair(target, replica, probeName string) string {
	if replica != "" {
		target += "@" + replica
	}
	return target + "/" + probeName
}

// demoPairs is the demo's pairs: two on the static target sim, one per
// replica of the file_sd target fleet.
const demoPairs = 4

func TestDemo(t *testing.T) {
	metricsURL, head, sc := daemontest.StartDemo(t, binary, "--duration=20s", "--summary.interval=1s")
	var out strings.Builder
	out.WriteString(head)
	for strings.Count(out.String(), "ITL p99") < 3 && sc.Scan() { // up to the third table header
		out.WriteString(sc.Text() + "\n")
	}
	for _, w := range []string{"chat-arithmetic", "completions-random", "TTFT p99", "acceptance", "in flight",
		"since start: offered, in flight (now), accepted, failed; over the last", "completed/s"} {
		if !strings.Contains(out.String(), w) {
			t.Errorf("summary lacks %q:\n%s", w, out.String())
		}
	}
	go func() { // keep draining the summary so the demo never blocks
		for sc.Scan() {
		}
	}()
	time.Sleep(2 * time.Second) // at least one server scrape at 5s intervals has happened by the third summary

	fams := promtext.Scrape(t, metricsURL)
	designMetrics, err := designdoc.MetricNames(".")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range designMetrics {
		if fams[name] == nil {
			t.Errorf("/metrics lacks %s", name)
		}
	}
	offered, done, inFlight := sumBy(fams["vllm_probe_requests_offered_total"]), sumBy(fams["vllm_probe_requests_total"]), sumBy(fams["vllm_probe_requests_in_flight"])
	if len(offered) != demoPairs {
		t.Errorf("offered for %d pairs, want %d: %v", len(offered), demoPairs, offered)
	}
	if got := fams["vllm_prober_discovery_replicas"]; got == nil || got.GetMetric()[0].GetGauge().GetValue() != 2 {
		t.Errorf("vllm_prober_discovery_replicas is not 2: %v", got)
	}
	if !strings.Contains(out.String(), "fleet@") {
		t.Errorf("summary lacks the fleet's replica rows:\n%s", out.String())
	}
	for pair, o := range offered {
		if o == 0 || o != done[pair]+inFlight[pair] {
			t.Errorf("%s: offered %v != finished %v + in flight %v", pair, o, done[pair], inFlight[pair])
		}
	}
	if got := fams["vllm_probe_server_scrape_success"]; got == nil || len(got.GetMetric()) != 3 || slices.ContainsFunc(got.GetMetric(), func(m *dto.Metric) bool { return m.GetGauge().GetValue() != 1 }) {
		t.Errorf("vllm_probe_server_scrape_success is not 1 for sim and both replicas: %v", got)
	}
	var serverSeries int
	for name, f := range fams {
		if !strings.HasPrefix(name, "vllm:") {
			continue
		}
		for _, m := range f.GetMetric() {
			serverSeries++
			if l := promtext.Labels(m); !(l["target"] == "sim" && l["replica"] == "" || l["target"] == "fleet" && l["replica"] != "") {
				t.Errorf("%s series without target label: %v", name, m.GetLabel())
			}
		}
	}
	if serverSeries == 0 {
		t.Error("no vllm:* server series re-exported")
	}
}

// TestDemoFinalTableEqualsLedger: the demo's final table, printed after
// the drain, counts every offered request once per disposition, exactly as
// a hand count of its ledger does, with faults on so that failures
// appear; nothing prints after it.
func TestDemoFinalTableEqualsLedger(t *testing.T) {
	cmd := exec.Command(binary, "demo", "--duration=6s", "--summary.interval=500ms", "--faults", "--seed=2",
		"--web.listen-address=127.0.0.1:0")
	stdout, err := cmd.Output()
	if err != nil {
		t.Fatalf("demo: %v\n%s", err, stdout)
	}
	out := string(stdout)
	var ledgerPath string
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) == 2 && f[0] == "ledger:" {
			ledgerPath = f[1]
		}
	}
	if ledgerPath == "" {
		t.Fatalf("demo printed no ledger path:\n%s", out)
	}
	// The last line names the directory the demo kept: the ledger's.
	out, kept, ok := strings.Cut(out, "\n"+demoDirKept)
	if dir, _, _ := strings.Cut(kept, " "); !ok || dir != filepath.Dir(ledgerPath) || strings.Count(kept, "\n") != 1 || !strings.HasSuffix(kept, "\n") {
		t.Fatalf("the demo's last line does not name its directory %s:\n%s", filepath.Dir(ledgerPath), stdout)
	}
	daemontest.RemoveDemoDir(t, filepath.Dir(ledgerPath))

	_, final, ok := strings.Cut(out, "final, after every request ended")
	if !ok {
		t.Fatalf("no final table:\n%s", out)
	}
	lines := strings.Split(strings.TrimSpace(final), "\n")[1:] // the rest of the title line
	if strings.Contains(final, "goodput/s") {
		t.Errorf("a live summary printed after the final table:\n%s", final)
	}
	header := strings.Fields(lines[0])
	table := map[string]map[string]int{} // pair -> column -> count
	acceptance := map[string]string{}
	for _, row := range lines[1:] {
		f := strings.Fields(row)
		if len(f) != len(header) {
			t.Fatalf("row %q does not match header %q", row, lines[0])
		}
		cols := map[string]int{}
		for i, h := range header[2 : len(header)-1] { // counts between probe and acceptance
			if cols[h], err = strconv.Atoi(f[i+2]); err != nil {
				t.Fatalf("column %s of %q: %v", h, row, err)
			}
		}
		table[f[0]+"/"+f[1]] = cols
		acceptance[f[0]+"/"+f[1]] = f[len(f)-1]
	}

	recs := ledgertest.Read(t, ledgerPath)
	hand := map[string]map[string]int{}
	for _, r := range recs {
		pair := demoPair(r.Target, r.Replica, r.Probe)
		if hand[pair] == nil {
			hand[pair] = map[string]int{}
		}
		hand[pair]["offered"]++
		hand[pair][string(r.Disposition)]++
		if r.Disposition == probe.Cancelled && (r.Reason == probe.ReasonShutdown || r.Reason == probe.ReasonRemoved) {
			hand[pair]["abandoned"]++
		}
	}
	if len(table) != demoPairs || len(hand) != demoPairs {
		t.Fatalf("final table has pairs %v, ledger %v; want the demo's %d", table, hand, demoPairs)
	}
	var notAccepted int
	for pair, cols := range table {
		for col, n := range cols {
			if hand[pair][col] != n {
				t.Errorf("%s %s: final table %d, ledger %d", pair, col, n, hand[pair][col])
			}
		}
		notAccepted += cols["offered"] - cols["accepted"]
		h := hand[pair]
		if want := status.FormatPct(float64(h["accepted"]) / float64(h["offered"]-h["abandoned"])); acceptance[pair] != want {
			t.Errorf("%s acceptance %s, want accepted / (offered - abandoned) = %s", pair, acceptance[pair], want)
		}
	}
	if notAccepted == 0 { // the faults are a few percent: rare, but possible
		t.Logf("with faults on, every request was accepted this time:\n%s", final)
	}
}

// TestServerMetricsGoAwayWithTheServer: while the target's /metrics
// answers, its vllm:* series are re-exported with the target label and
// scrape success is 1; when the server goes away success turns 0 and no
// stale vllm:* series remain.
func TestServerMetricsGoAwayWithTheServer(t *testing.T) {
	sim, simURL := startSimulatorServer(t)
	cfgPath := writeChatConfig(t, t.TempDir(), simURL, 2, "")
	d := startDaemon(t, "--config.file="+cfgPath)

	state := func() (success float64, serverSeries int) {
		fams := promtext.Scrape(t, d.URL("/metrics"))
		if f := fams["vllm_probe_server_scrape_success"]; f != nil && len(f.GetMetric()) == 1 {
			success = f.GetMetric()[0].GetGauge().GetValue()
		} else {
			success = -1
		}
		for name, f := range fams {
			if strings.HasPrefix(name, "vllm:") {
				serverSeries += len(f.GetMetric())
			}
		}
		return success, serverSeries
	}
	waitFor(t, "server series while the server is up", func() bool {
		s, n := state()
		return s == 1 && n > 0
	})
	sim.Close()
	waitFor(t, "scrape failure after the server went away", func() bool {
		s, n := state()
		return s == 0 && n == 0
	})
}

// TestDemoBadFlags checks that demo refuses its own bad flag values with one
// message naming the flag, exit 2, before it starts anything: a negative
// --duration used to be taken as 0 and run until interrupted.
func TestDemoBadFlags(t *testing.T) {
	for _, tc := range []struct{ flag, want string }{
		{"--duration=-1s", "--duration=-1s: must not be negative"},
		{"--summary.interval=0s", "--summary.interval=0s: must be > 0"},
	} {
		t.Run(tc.flag, func(t *testing.T) {
			// The context only stops a demo that did start, so the test
			// fails instead of hanging.
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, binary, "demo", tc.flag, "--web.listen-address=127.0.0.1:0")
			code, out, err := daemontest.Output(cmd)
			if err != nil {
				t.Fatal(err)
			}
			if ctx.Err() != nil {
				t.Fatalf("demo %s started and ran until killed:\n%s", tc.flag, out)
			}
			if code != 2 || !strings.Contains(out, tc.want) || strings.Contains(out, "vllm-prober demo\n") {
				t.Errorf("exit %d, output:\n%s\nwant exit 2, %q and no demo started", code, out, tc.want)
			}
		})
	}
}
