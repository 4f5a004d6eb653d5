package config

import (
	"reflect"
	"testing"
)

// TestHistogramSelection: a probe takes global's histograms and
// classic_buckets unless it writes its own, and the default is every
// histogram with classic buckets (full mode).
func TestHistogramSelection(t *testing.T) {
	const probes = `
probes:
  - name: inherits
    api: chat
    rate: 0.2
    workload: {random: {input_tokens: 8, output_tokens: 8}}
  - name: own
    api: chat
    rate: 0.2
    histograms: [e2el, ttft]
    classic_buckets: true
    workload: {random: {input_tokens: 8, output_tokens: 8}}
`
	full := HistogramSelection{Names: Histograms, Classic: true}
	for _, tc := range []struct {
		name          string
		global        string
		inherits, own HistogramSelection
	}{
		{"defaults", "", full, HistogramSelection{Names: []string{"e2el", "ttft"}, Classic: true}},
		{"global lean", "global:\n  histograms: [ttft, itl]\n  classic_buckets: false\n",
			HistogramSelection{Names: []string{"ttft", "itl"}, Classic: false},
			HistogramSelection{Names: []string{"e2el", "ttft"}, Classic: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := mustParse(t, tc.global+validTarget+probes)
			if got := cfg.Probes[0].HistogramSelection(); !reflect.DeepEqual(got, tc.inherits) {
				t.Errorf("inheriting probe: got %+v, want %+v", got, tc.inherits)
			}
			if got := cfg.Probes[1].HistogramSelection(); !reflect.DeepEqual(got, tc.own) {
				t.Errorf("probe with its own keys: got %+v, want %+v", got, tc.own)
			}
			// The resolved selection is in the probe, so Config.String
			// reloads to the same pairs.
			again := mustParse(t, cfg.String())
			for i := range cfg.Probes {
				if !reflect.DeepEqual(again.Probes[i].HistogramSelection(), cfg.Probes[i].HistogramSelection()) {
					t.Errorf("probe %d: selection changed through Config.String", i)
				}
			}
		})
	}
	if got := (Probe{}).HistogramSelection(); !reflect.DeepEqual(got, full) {
		t.Errorf("probe built in code: got %+v, want full %+v", got, full)
	}
	cfg := mustParse(t, validTarget+validProbe)
	cfg.Probes[0].Histograms[0] = "changed"
	if DefaultGlobal.Histograms[0] != HistogramTTFT || Histograms[0] != HistogramTTFT {
		t.Errorf("a loaded config aliases the default histogram list")
	}
}
