//go:build e2e

package e2e

import (
	"fmt"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/vllm-prober/vllm-prober/internal/daemontest"
	"github.com/vllm-prober/vllm-prober/internal/testfile"
	"github.com/vllm-prober/vllm-prober/probe"
	"github.com/vllm-prober/vllm-prober/probe/ledger"
	"github.com/vllm-prober/vllm-prober/simulator"
)

// TestFleetFileSDUnderLoad runs the binary against a file_sd fleet whose
// replicas answer slowly (a second before the first token), so every
// replica always has requests in flight: a third replica written into the
// file is probed within a refresh; a replica taken out stops being
// scheduled, its in-flight requests finish and its series go; an empty
// file ends the others the same way. At every scrape offered = sum of
// dispositions + in flight per (target, probe, replica); at the end each
// replica's ledger records (seqs 1..n, each disposition counted) equal its
// last counts in /metrics: no request lost or counted twice.
func TestFleetFileSDUnderLoad(t *testing.T) {
	_, addrs := startFleetSims(t, 3, simulator.Faults{ExtraTTFT: time.Second})
	dir := t.TempDir()
	ledgerPath := filepath.Join(dir, "ledger.jsonl")
	writeTargetGroups(t, dir, addrs[:2])
	cfg := testfile.Write(t, dir, "c.yml", fmt.Sprintf(`global:
  ledger: {path: %q}
targets:
  - name: fleet
    model: sim-llama
    metrics_path: ""
    discovery: {file_sd: {files: [fleet.json], refresh: 1s}}
`, ledgerPath)+fleetProbe)
	p := daemontest.Start(t, binary, "--config.file="+cfg)
	w := watchFleet(t, p)

	w.waitProbed(t, 20*time.Second, "fleet", addrs[:2])
	writeTargetGroups(t, dir, addrs)
	took := w.waitProbed(t, 10*time.Second, "fleet", addrs)
	t.Logf("the added replica was probed %s after the file changed (refresh 1s)", took.Round(100*time.Millisecond))

	removed := pairID{"fleet", "chat", addrs[0]}
	if c, _ := w.pair(removed); c.inFlight == 0 {
		t.Fatalf("replica %s has nothing in flight before its removal: the test would not prove draining", addrs[0])
	}
	writeTargetGroups(t, dir, addrs[1:])
	waitGone(t, w, removed)
	w.waitProbed(t, 5*time.Second, "fleet", addrs[1:])

	writeTargetGroups(t, dir, nil)
	for _, a := range addrs[1:] {
		waitGone(t, w, pairID{"fleet", "chat", a})
	}
	w.halt()
	if err := p.Stop(t, syscall.SIGTERM); err != nil {
		t.Fatalf("daemon exit: %v\n%s", err, p.Logs())
	}
	w.check(t)
	checkLedgerAgainstCounts(t, readFleetLedger(t, ledgerPath), w, addrs)
}

// waitGone waits until id's series have left the exposition, which they
// do once its last in-flight request has finished.
func waitGone(t *testing.T, w *fleetWatch, id pairID) {
	t.Helper()
	daemontest.WaitFor(t, 20*time.Second, fmt.Sprintf("the series of %s to go", id), func() bool {
		_, there := w.pair(id)
		return !there
	})
	if c := w.final(id); c.inFlight != 0 {
		t.Logf("%s drained %g requests in flight after it stopped being scheduled", id, c.inFlight)
	}
}

// checkLedgerAgainstCounts: per replica, the ledger holds seqs 1..n once
// each, n equals the pair's last offered count, and its records by
// disposition equal the last disposition counters plus what was still in
// flight (which finished and was recorded after the last scrape), none
// was cancelled by the removal or the shutdown, and the last one ended
// before the pair's series went.
func checkLedgerAgainstCounts(t *testing.T, recs map[pairID][]ledger.Record, w *fleetWatch, addrs []string) {
	t.Helper()
	for _, a := range addrs {
		id := pairID{"fleet", "chat", a}
		rs := recs[id]
		last := w.final(id)
		seqs := make([]uint64, len(rs))
		for i, r := range rs {
			seqs[i] = r.Seq
		}
		slices.Sort(seqs)
		for i, s := range seqs {
			if s != uint64(i+1) {
				t.Errorf("%s: sorted seq %d is %d: a record lost or duplicated", id, i+1, s)
				break
			}
		}
		if len(rs) == 0 || float64(len(rs)) != last.offered {
			t.Errorf("%s: %d ledger records, last offered %g", id, len(rs), last.offered)
		}
		byDisp := map[string]float64{}
		var lastEnd time.Time
		for _, r := range rs {
			byDisp[string(r.Disposition)]++
			if r.Sent != nil && r.E2ELS != nil {
				if end := r.Sent.Add(time.Duration(*r.E2ELS * float64(time.Second))); end.After(lastEnd) {
					lastEnd = end
				}
			}
			if r.Reason == probe.ReasonRemoved || r.Reason == probe.ReasonShutdown {
				t.Errorf("%s: request %d cancelled (%s): it should have finished within the grace period", id, r.Seq, r.Reason)
			}
		}
		if gone := w.gone(id); gone.IsZero() || lastEnd.After(gone) {
			t.Errorf("%s: its last request ended at %s, its series were gone by %s: they must go only after it", id, lastEnd.Format(time.StampMilli), gone.Format(time.StampMilli))
		}
		var counted float64
		for d, n := range last.byDisposition {
			if byDisp[d] < n {
				t.Errorf("%s: %g %s records, the counter said %g", id, byDisp[d], d, n)
			}
			counted += n
		}
		t.Logf("%s: %d records (%v), offered %g, %g finished after the last scrape", id, len(rs), byDisp, last.offered, float64(len(rs))-counted)
	}
	for id := range recs {
		if id.replica == "" {
			t.Errorf("%d ledger records of %s without a replica", len(recs[id]), id)
		}
	}
}

// writeTargetGroups replaces dir/fleet.json with one target group of
// addrs.
func writeTargetGroups(t *testing.T, dir string, addrs []string) {
	t.Helper()
	daemontest.WriteFileSD(t, filepath.Join(dir, "fleet.json"), addrs, nil)
}
