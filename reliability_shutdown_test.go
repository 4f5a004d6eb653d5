package main

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/vllm-prober/vllm-prober/probe"
	"github.com/vllm-prober/vllm-prober/simulator"
)

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
