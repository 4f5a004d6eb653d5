package collector

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/vllm-prober/vllm-prober/collector/metricname"
	"github.com/vllm-prober/vllm-prober/config"
	"github.com/vllm-prober/vllm-prober/probe"
)

// TestCollectorFingerprintChanges: a pair whose probe has a fingerprint
// exports vllm_probe_output_fingerprint_changes_total from 0 and counts the
// results that confirmed a change, not the others; a pair without one
// exports no such series.
func TestCollectorFingerprintChanges(t *testing.T) {
	c := New(Options{Now: clock})
	cfg := testConfig(map[string][]string{"t": nil}, map[string]config.SLO{"fp": {}, "plain": {}})
	for i := range cfg.Probes {
		if cfg.Probes[i].Name == "fp" {
			cfg.Probes[i].Fingerprint = &config.Fingerprint{Tokens: 16, Confirm: 3}
		}
	}
	syncPairs(c, cfg)
	header := lines("# HELP "+metricname.OutputFingerprintChanges+" "+metricname.OutputFingerprintChangesHelp,
		"# TYPE "+metricname.OutputFingerprintChanges+" counter")
	compare := func(want string) {
		t.Helper()
		if err := testutil.CollectAndCompare(c, strings.NewReader(want), metricname.OutputFingerprintChanges); err != nil {
			t.Error(err)
		}
	}
	compare(header + lines(`vllm_probe_output_fingerprint_changes_total{probe="fp",replica="",target="t"} 0`))

	for _, r := range []*probe.Result{
		{Probe: "fp", Fingerprint: &probe.OutputFingerprint{Hash: "a"}},
		{Probe: "fp", Fingerprint: &probe.OutputFingerprint{Hash: "b", Changed: true}},
		{Probe: "fp", Fingerprint: &probe.OutputFingerprint{Prompt: 1, Hash: "c", Changed: true}},
		{Probe: "fp"},
		{Probe: "plain", Fingerprint: &probe.OutputFingerprint{Hash: "b", Changed: true}},
	} {
		r.Target, r.Disposition = "t", probe.Accepted
		finish(c, r)
	}
	compare(header + lines(`vllm_probe_output_fingerprint_changes_total{probe="fp",replica="",target="t"} 2`))

	// A reload that drops the fingerprint drops the series.
	cfg.Probes = []config.Probe{{Name: "fp", API: config.APIChat, Rate: 1}}
	syncPairs(c, cfg)
	compare("")
}
