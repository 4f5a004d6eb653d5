package config

import (
	"fmt"
	"slices"
	"strings"

	"github.com/vllm-prober/vllm-prober/config/strictyaml"
)

// Names of the latency histograms a probe can select with `histograms:`
// (docs/design.md, Series budget). Each is one or more
// vllm_probe_*_seconds families per pair.
const (
	HistogramTTFT        = "ttft"         // vllm_probe_time_to_first_token_seconds
	HistogramITL         = "itl"          // vllm_probe_inter_token_latency_seconds
	HistogramTPOT        = "tpot"         // vllm_probe_time_per_output_token_seconds
	HistogramE2EL        = "e2el"         // vllm_probe_e2e_request_latency_seconds
	HistogramTTFA        = "ttfa"         // vllm_probe_time_to_first_answer_token_seconds
	HistogramPhases      = "phases"       // vllm_probe_http_phase_seconds, one series per phase
	HistogramScheduleLag = "schedule_lag" // vllm_probe_schedule_lag_seconds
	HistogramServer      = "server"       // vllm_probe_server_{time_to_first_token,queue_time}_seconds
)

// Histograms lists every histogram the prober measures, in the order
// docs/design.md gives them; it is the default selection (full mode).
var Histograms = []string{
	HistogramTTFT, HistogramITL, HistogramTPOT, HistogramE2EL, HistogramTTFA,
	HistogramPhases, HistogramScheduleLag, HistogramServer,
}

// LeanHistograms is the selection of a discovered replica's pairs unless
// the file chose one (docs/design.md, Series budget): a fleet multiplies
// every per-pair series by its replicas.
var LeanHistograms = []string{HistogramTTFT, HistogramE2EL}

// ReplicaHistograms returns p as a discovered replica's pair runs it: with
// the lean histograms unless the file chose some (HistogramsWritten). The
// daemon's replica pairs (PairsWith) and the generated rules, which must
// not read a histogram those pairs do not export, both take it.
func (p Probe) ReplicaHistograms() Probe {
	if !p.HistogramsWritten {
		p.Histograms = slices.Clone(LeanHistograms)
	}
	return p
}

// HistogramSelection is the set of histograms a probe exports and whether
// they carry classic buckets as well as native ones.
type HistogramSelection struct {
	Names   []string
	Classic bool
}

// HistogramSelection returns what p selected. A Probe built in code, with
// neither key set, selects every histogram with classic buckets, as a
// loaded one does by default.
func (p Probe) HistogramSelection() HistogramSelection {
	s := HistogramSelection{Names: p.Histograms, Classic: p.ClassicBuckets == nil || *p.ClassicBuckets}
	if s.Names == nil {
		s.Names = Histograms
	}
	return s
}

// Has reports whether name is selected.
func (s HistogramSelection) Has(name string) bool { return slices.Contains(s.Names, name) }

// histograms checks a `histograms:` list at path: known names, each once.
func (v *validator) histograms(path string, names []string) {
	if len(names) == 0 {
		v.p.Fail(path, "must name at least one of %s (counters are always exported), got []", strings.Join(Histograms, ", "))
		return
	}
	seen := map[string]bool{}
	for i, n := range names {
		ep := fmt.Sprintf("%s[%d]", path, i)
		switch {
		case !slices.Contains(Histograms, n):
			v.p.Fail(ep, "must be one of %s, got %s", strings.Join(Histograms, ", "), strictyaml.Quote(n))
		case seen[n]:
			v.p.Fail(ep, "histogram listed twice, got %s", strictyaml.Quote(n))
		}
		seen[n] = true
	}
}

// probeHistograms checks a probe's selection and, for the keys the probe
// does not write, takes the global default, so a loaded Probe always holds
// its own selection (and its pair's fingerprint changes with it).
func (v *validator) probeHistograms(p *Probe, g Global, path string) {
	p.HistogramsWritten = v.p.Written(path+".histograms") || v.p.Written("global.histograms")
	if v.p.Written(path + ".histograms") {
		v.histograms(path+".histograms", p.Histograms)
	} else {
		p.Histograms = slices.Clone(g.Histograms)
	}
	if !v.p.Written(path + ".classic_buckets") {
		p.ClassicBuckets = g.ClassicBuckets
	}
}
