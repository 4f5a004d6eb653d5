package main

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vllm-prober/vllm-prober/internal/daemontest"
	"github.com/vllm-prober/vllm-prober/internal/promtext"
	"github.com/vllm-prober/vllm-prober/internal/testfile"
	"github.com/vllm-prober/vllm-prober/probe"
	"github.com/vllm-prober/vllm-prober/probe/ledger"
	"github.com/vllm-prober/vllm-prober/probe/ledger/ledgertest"
	"github.com/vllm-prober/vllm-prober/simulator"
)

// relSim runs a simulator with faults on a loopback port.
func relSim(t *testing.T, f simulator.Faults) string {
	t.Helper()
	return startSimulator(t, func(o *simulator.Options) { o.Seed, o.Faults = 5, f })
}

// relConfig is one chat probe at rate against simURL with the given
// timeout, writing the ledger to ledger.
func relConfig(t *testing.T, dir, simURL string, rate float64, timeout, ledger string) string {
	t.Helper()
	return testfile.Write(t, dir, "c.yml", chatConfig{simURL, ledger, rate, timeout, false}.String())
}

// relCounts scrapes the pair's offered and finished counts.
func relCounts(t *testing.T, d *daemontest.Proc) (offered, finished float64) {
	t.Helper()
	fams := promtext.Scrape(t, d.URL("/metrics"))
	offered = sumBy(fams["vllm_probe_requests_offered_total"])["sim/chat"]
	finished = sumBy(fams["vllm_probe_requests_total"])["sim/chat"]
	return offered, finished
}

// relSeqs reads the ledger and returns its seqs, sorted, and the torn count.
func relSeqs(t *testing.T, path string) ([]ledger.Record, []uint64, int) {
	t.Helper()
	recs, torn, err := ledger.Read(path)
	if err != nil {
		t.Fatalf("ledger.Read after the run: %v", err)
	}
	seqs := make([]uint64, 0, len(recs))
	for _, r := range recs {
		seqs = append(seqs, r.Seq)
	}
	slices.Sort(seqs)
	return recs, seqs, torn
}

// TestCrashKeepsLedgerReadable kills the daemon with SIGKILL at 20
// requests/s: the ledger reads back, misses at most about the last second
// of finished requests, and a restart after a torn last line appends
// whole records.
func TestCrashKeepsLedgerReadable(t *testing.T) {
	simURL := relSim(t, simulator.Faults{})
	dir := t.TempDir()
	ledger := filepath.Join(dir, "ledger.jsonl")
	cfgPath := relConfig(t, dir, simURL, 20, "5s", ledger)
	d := startDaemon(t, "--config.file="+cfgPath)
	waitFor(t, "60 finished requests", func() bool { _, f := relCounts(t, d); return f >= 60 })
	_, finished := relCounts(t, d)
	_ = d.Stop(t, syscall.SIGKILL) // killed: the exit error is expected

	_, seqs, torn := relSeqs(t, ledger)
	if torn > 1 {
		t.Errorf("%d torn lines, at most the last one may be", torn)
	}
	if len(slices.Compact(slices.Clone(seqs))) != len(seqs) {
		t.Errorf("duplicate seqs in the ledger")
	}
	// Flushes happen every second: at most 20 records (one second at 20/s)
	// plus the requests that finished between the scrape and the kill.
	if missing := int(finished) - len(seqs); missing > 25 {
		t.Errorf("ledger holds %d records, /metrics counted %d finished just before the kill: %d missing", len(seqs), int(finished), missing)
	}

	// A write cut short by the crash, then a restart on the same file.
	f, err := os.OpenFile(ledger, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(`{"seq":999999,"target":"sim","probe":"ch`); err != nil {
		t.Fatal(err)
	}
	f.Close()
	before := len(seqs)
	d2 := startDaemon(t, "--config.file="+cfgPath)
	waitFor(t, "20 finished requests after the restart", func() bool { _, f := relCounts(t, d2); return f >= 20 })
	stopDaemon(t, d2)
	recs, _, torn := relSeqs(t, ledger)
	if torn != 1 {
		t.Errorf("%d torn lines after the restart, want exactly the cut one", torn)
	}
	var second []uint64
	for _, r := range recs[before:] {
		second = append(second, r.Seq)
	}
	// Requests finish out of order (the first one also discovers the
	// model), so the new run's records hold seqs 1..n in any order.
	slices.Sort(second)
	for i, s := range second {
		if s != uint64(i+1) {
			t.Fatalf("records after the restart are not seqs 1..%d: %v", len(second), second)
		}
	}
}

// TestLedgerWriteFailuresKeepProbing writes the ledger to /dev/full (a
// full disk): errors are counted in vllm_prober_ledger_write_errors_total,
// logged once, shown on the status page, and probing goes on.
func TestLedgerWriteFailuresKeepProbing(t *testing.T) {
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Fatalf("/dev/full is needed to simulate a full disk: %v", err)
	}
	simURL := relSim(t, simulator.Faults{})
	dir := t.TempDir()
	cfgPath := relConfig(t, dir, simURL, 20, "5s", "/dev/full")
	d := startDaemon(t, "--config.file="+cfgPath)
	errorsRE := regexp.MustCompile(`(?m)^vllm_prober_ledger_write_errors_total (\d+)`)
	writeErrors := func() int {
		_, body := get(t, http.MethodGet, d.URL("/metrics"))
		var n int
		if m := errorsRE.FindStringSubmatch(body); m != nil {
			fmt.Sscan(m[1], &n)
		}
		return n
	}
	waitFor(t, "ledger write errors", func() bool { return writeErrors() > 0 })
	_, finished1 := relCounts(t, d)
	time.Sleep(2500 * time.Millisecond) // two more failing flushes
	_, finished2 := relCounts(t, d)
	if finished2 < finished1+30 {
		t.Errorf("probing slowed down with a failing ledger: %g then %g finished 2.5s later", finished1, finished2)
	}
	if n := writeErrors(); n < int(finished1) {
		t.Errorf("%d write errors counted, but %g records could not have been written", n, finished1)
	}
	if n := strings.Count(d.Logs(), "ledger writes failing"); n != 1 {
		t.Errorf("the failing ledger was logged %d times, want once:\n%s", n, d.Logs())
	}
	_, page := get(t, http.MethodGet, d.URL("/"))
	if !strings.Contains(page, `<span class="bad">failing</span>`) || !regexp.MustCompile(`write errors: [1-9]\d*`).MatchString(page) {
		t.Errorf("status page does not show the failing ledger")
	}
	stopDaemon(t, d)
}

// TestGracefulShutdown stops a daemon with requests in flight by SIGTERM
// and SIGINT: requests that can finish within the grace period (10s)
// finish, stalled ones end cancelled/shutdown when it ends, every offered
// request is in the flushed ledger, and the exit code is 0.
func TestGracefulShutdown(t *testing.T) {
	tests := []struct {
		name         string
		sig          os.Signal
		faults       simulator.Faults
		want         probe.Disposition
		reason       string
		minT, maxT   time.Duration // time from the signal to the exit
		probeTimeout string
	}{
		{"SIGTERM: slow requests finish", syscall.SIGTERM, simulator.Faults{ExtraTTFT: 1500 * time.Millisecond},
			probe.Accepted, "", 0, 6 * time.Second, "10s"},
		{"SIGINT: stalled requests are cancelled after the grace period", os.Interrupt,
			simulator.Faults{Stall: 1, StallDuration: time.Minute}, probe.Cancelled, probe.ReasonShutdown, 9 * time.Second, 20 * time.Second, "40s"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			simURL := relSim(t, tc.faults)
			dir := t.TempDir()
			ledger := filepath.Join(dir, "ledger.jsonl")
			d := startDaemon(t, "--config.file="+relConfig(t, dir, simURL, 10, tc.probeTimeout, ledger))
			waitFor(t, "requests in flight", func() bool { o, f := relCounts(t, d); return o-f >= 5 })
			offered, _ := relCounts(t, d)
			start := time.Now()
			err := d.Stop(t, tc.sig)
			took := time.Since(start)
			if err != nil {
				t.Errorf("exit: %v", err)
			}
			if took < tc.minT || took > tc.maxT {
				t.Errorf("exited %s after the signal, want between %s and %s", took.Round(time.Millisecond), tc.minT, tc.maxT)
			}
			recs, seqs, torn := relSeqs(t, ledger)
			if torn != 0 || len(seqs) < int(offered) {
				t.Errorf("ledger: %d records, %d torn; %g were offered before the signal", len(seqs), torn, offered)
			}
			for i, s := range seqs {
				if s != uint64(i+1) {
					t.Fatalf("ledger seqs are not 1..%d: position %d holds %d", len(seqs), i, s)
				}
			}
			for _, r := range recs {
				if r.Disposition != tc.want || r.Reason != tc.reason {
					t.Errorf("seq %d: %s/%s (%s), want %s/%s", r.Seq, r.Disposition, r.Reason, r.Error, tc.want, tc.reason)
				}
			}
		})
	}
}

// TestLedgerDirectoryDeletedWhileRunning deletes the ledger's directory
// under a running daemon: later records land in the file made again, no
// write error is counted (none was lost) and the status page says the file
// was reopened.
func TestLedgerDirectoryDeletedWhileRunning(t *testing.T) {
	simURL := startSimulator(t)
	dir := t.TempDir()
	ledgerDir := filepath.Join(dir, "ledger")
	ledger := filepath.Join(ledgerDir, "ledger.jsonl")
	cfgPath := writeChatConfig(t, dir, simURL, 10, ledger)
	d := startDaemon(t, "--config.file="+cfgPath)
	waitFor(t, "records in the ledger", func() bool {
		b, err := os.ReadFile(ledger)
		return err == nil && len(b) > 0
	})
	if err := os.RemoveAll(ledgerDir); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "records in the recreated ledger", func() bool {
		b, err := os.ReadFile(ledger)
		return err == nil && strings.Count(string(b), "\n") >= 3
	})
	_, page := get(t, http.MethodGet, d.URL("/"))
	if !strings.Contains(page, "write errors: 0 · file deleted or replaced and reopened 1 times") {
		t.Errorf("status page does not show the reopened ledger:\n%s", page)
	}
	if !metricsContain(t, d, "vllm_prober_ledger_write_errors_total 0") {
		t.Error("write errors counted though no record was lost")
	}
	if logs := d.Logs(); !strings.Contains(logs, "ledger file vanished or was replaced") {
		t.Errorf("reopening not logged:\n%s", logs)
	}
}

// TestLedgerRunIDSeparatesRestarts runs the daemon twice on one ledger:
// each run's records carry the run_id it logged at start, and within a
// run_id every pair's seq counts from 1 without gaps, which is how a
// reader tells a restart from lost records.
func TestLedgerRunIDSeparatesRestarts(t *testing.T) {
	simURL := startSimulator(t)
	dir := t.TempDir()
	ledgerPath := filepath.Join(dir, "ledger.jsonl")
	cfgPath := writeChatConfig(t, dir, simURL, 10, ledgerPath)
	runIDRE := regexp.MustCompile(`msg="Probing started".* run_id=([0-9a-f]{16})`)
	var logged []string
	for range 2 {
		d := startDaemon(t, "--config.file="+cfgPath)
		var id string
		waitFor(t, "the run_id logged at start", func() bool {
			m := runIDRE.FindStringSubmatch(d.Logs())
			if m != nil {
				id = m[1]
			}
			return m != nil
		})
		waitFor(t, "records of this run", func() bool {
			recs, _, err := ledger.Read(ledgerPath)
			n := 0
			for _, r := range recs {
				if r.RunID == id {
					n++
				}
			}
			return err == nil && n >= 3
		})
		stopDaemon(t, d)
		logged = append(logged, id)
	}
	if logged[0] == logged[1] {
		t.Fatalf("both runs logged run_id %s", logged[0])
	}
	recs := ledgertest.Read(t, ledgerPath)
	seqs := map[string][]uint64{}
	for _, r := range recs {
		seqs[r.RunID] = append(seqs[r.RunID], r.Seq)
	}
	if len(seqs) != 2 || len(seqs[logged[0]]) == 0 || len(seqs[logged[1]]) == 0 {
		t.Fatalf("records by run_id %v, want those of the logged %v", seqs, logged)
	}
	for id, s := range seqs {
		slices.Sort(s)
		for i, seq := range s {
			if seq != uint64(i+1) {
				t.Errorf("run %s: seqs %v, want 1..%d", id, s, len(s))
				break
			}
		}
	}
}

// TestRefusedConnectionIsConnect: a target nothing listens on, whose model
// the prober would discover from /v1/models, fails with reason connect, not
// model_discovery, in the ledger, the metrics and on the status page.
func TestRefusedConnectionIsConnect(t *testing.T) {
	closed := "http://" + daemontest.FreeAddr(t)
	dir := t.TempDir()
	cfgPath, ledgerPath := filepath.Join(dir, "c.yml"), filepath.Join(dir, "ledger.jsonl")
	writeConfig(t, cfgPath, closed, 5, ledgerPath) // no model: discovered
	d := startDaemon(t, "--config.file="+cfgPath)

	const connect = `vllm_probe_failures_total{probe="chat",reason="connect",replica="",target="sim"}`
	waitFor(t, "connect failures", func() bool {
		return metricsContain(t, d, connect) && !metricsContain(t, d, connect+" 0")
	})
	if !metricsContain(t, d, `vllm_probe_failures_total{probe="chat",reason="model_discovery",replica="",target="sim"} 0`) {
		t.Error("model_discovery failures counted for a refused connection")
	}
	_, page := get(t, http.MethodGet, d.URL("/"))
	if !strings.Contains(page, `<td class="l">connect</td>`) || strings.Contains(page, "model_discovery") {
		t.Errorf("status page does not show reason connect:\n%s", page)
	}
	stopDaemon(t, d)
	recs, _, err := ledger.Read(ledgerPath)
	if err != nil || len(recs) == 0 {
		t.Fatalf("ledger: %d records, %v", len(recs), err)
	}
	for _, r := range recs {
		if r.Disposition != probe.ServerFailure || r.Reason != probe.ReasonConnect || r.Sent != nil {
			t.Errorf("ledger record %d: %s/%s sent %v, want server_failure/connect, never sent", r.Seq, r.Disposition, r.Reason, r.Sent)
		}
	}
}
