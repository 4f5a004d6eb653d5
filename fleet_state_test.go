package main

import (
	"log/slog"
	"testing"
	"time"

	"github.com/prometheus/common/model"

	"github.com/vllm-prober/vllm-prober/collector"
	"github.com/vllm-prober/vllm-prober/config"
	"github.com/vllm-prober/vllm-prober/discovery"
	"github.com/vllm-prober/vllm-prober/internal/testfile"
	"github.com/vllm-prober/vllm-prober/status"
)

// TestFleetStateAfterFailureRecovers: a file_sd refresh that fails (a file
// caught empty) and the next one that succeeds with the same set as before
// leave the discovery state saying so: the last refresh succeeded (no
// error), and "refreshed" is that refresh, not the last change of the set
// (docs/design.md, Fleets: the status page shows the last refresh and the
// last failed refresh's error; status.DiscoveryState: Err is "" when the
// last refresh succeeded, Updated the last successful refresh).
func TestFleetStateAfterFailureRecovers(t *testing.T) {
	dir := t.TempDir()
	set := `[{"targets": ["127.0.0.1:9"]}]`
	testfile.Write(t, dir, "fleet.json", set)
	cfg := &config.Config{Targets: []config.Target{{Name: "fleet", MaxReplicas: 256, Discovery: &discovery.Config{
		FileSD: &discovery.FileSDConfig{Files: []string{"fleet.json"}, Refresh: model.Duration(50 * time.Millisecond)},
	}}}}
	f := newFleet(slog.New(slog.DiscardHandler), newDiscoverer(""), collector.NewDiscoveryMetrics(), func() {})
	f.configure(cfg, dir)
	defer f.stop()

	waitState := func(what string, ok func(st status.DiscoveryState) bool) status.DiscoveryState {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			if st := f.state("fleet"); st != nil && ok(*st) {
				return *st
			}
			if time.Now().After(deadline) {
				t.Fatalf("discovery state %+v: never %s", f.state("fleet"), what)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	first := waitState("found the replica", func(st status.DiscoveryState) bool { return st.Replicas == 1 && !st.Updated.IsZero() })

	testfile.Write(t, dir, "fleet.json", "") // caught being rewritten: the refresh fails
	failed := waitState("failed", func(st status.DiscoveryState) bool { return st.Err != "" })
	if failed.Replicas != 1 || !failed.Updated.Equal(first.Updated) {
		t.Errorf("after the failure: %+v, want the last set kept (1 replica, refreshed at %v)", failed, first.Updated)
	}

	testfile.Write(t, dir, "fleet.json", set) // the same set again
	waitState("recovered: no error, refreshed after the failure", func(st status.DiscoveryState) bool {
		return st.Err == "" && st.Replicas == 1 && st.Updated.After(failed.ErrAt)
	})
}
