package collector

import (
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vllm-prober/vllm-prober/collector/metricname"
	"github.com/vllm-prober/vllm-prober/config"
	"github.com/vllm-prober/vllm-prober/probe"
)

// pairHistograms are the latency histograms of one pair. Their buckets
// depend on the pair's SLO thresholds, and which of them exist on the
// probe's histogram selection, so a pair gets a new set when either
// changes. A histogram the probe did not select is nil (phases: empty)
// and has no series.
type pairHistograms struct {
	ttft, itl, tpot, e2el, lag, serverTTFT, serverQueue prometheus.Histogram
	ttfa                                                prometheus.Histogram
	phases                                              map[string]prometheus.Histogram
	// families are the same histograms by family name (the phases in
	// probe.Phases order), for collecting and gathering.
	families map[string][]prometheus.Histogram
}

// histogramFamilies are the latency histogram families, in the order a
// pair's histograms are collected and gathered.
var histogramFamilies = []struct{ name, help string }{
	{metricname.TTFT, metricname.TTFTHelp},
	{metricname.ITL, metricname.ITLHelp},
	{metricname.TPOT, metricname.TPOTHelp},
	{metricname.E2EL, metricname.E2ELHelp},
	{metricname.TTFA, metricname.TTFAHelp},
	{metricname.ScheduleLag, metricname.ScheduleLagHelp},
	{metricname.ServerTTFT, metricname.ServerTTFTHelp},
	{metricname.ServerQueueTime, metricname.ServerQueueTimeHelp},
	{metricname.HTTPPhase, metricname.HTTPPhaseHelp},
}

// histogramDescs returns the descriptors every pair's histograms share:
// same name, help and label names, hence the same descriptor identity.
func histogramDescs() []*prometheus.Desc {
	out := make([]*prometheus.Desc, 0, len(histogramFamilies))
	for _, f := range histogramFamilies {
		labels := pairLabels
		if f.name == metricname.HTTPPhase {
			labels = append(slices.Clone(pairLabels), labelPhase)
		}
		out = append(out, prometheus.NewDesc(f.name, f.help, labels, nil))
	}
	return out
}

// newPairHistograms builds the histograms a pair's probe selected. ITL
// shares vLLM's ITL/TPOT buckets and also gets the TPOT threshold:
// per-gap and per-request token latency are judged against the same
// budget by people reading them.
func newPairHistograms(k config.PairKey, s histogramShape) *pairHistograms {
	th, sel := s.th, s.sel
	families := map[string][]prometheus.Histogram{}
	hist := func(kind, name, help string, buckets []float64) prometheus.Histogram {
		if !sel.Has(kind) {
			return nil
		}
		m := newHistogram(k, name, help, classicBuckets(sel, buckets))
		families[name] = append(families[name], m)
		return m
	}
	h := &pairHistograms{
		ttft:        hist(config.HistogramTTFT, metricname.TTFT, metricname.TTFTHelp, withThresholds(ttftBuckets, th.ttft...)),
		itl:         hist(config.HistogramITL, metricname.ITL, metricname.ITLHelp, withThresholds(itlBuckets, th.tpot...)),
		tpot:        hist(config.HistogramTPOT, metricname.TPOT, metricname.TPOTHelp, withThresholds(itlBuckets, th.tpot...)),
		e2el:        hist(config.HistogramE2EL, metricname.E2EL, metricname.E2ELHelp, withThresholds(requestLatencyBuckets, th.e2el...)),
		ttfa:        hist(config.HistogramTTFA, metricname.TTFA, metricname.TTFAHelp, withThresholds(ttftBuckets, th.ttfa...)),
		lag:         hist(config.HistogramScheduleLag, metricname.ScheduleLag, metricname.ScheduleLagHelp, fineBuckets),
		serverTTFT:  hist(config.HistogramServer, metricname.ServerTTFT, metricname.ServerTTFTHelp, withThresholds(ttftBuckets, th.ttft...)),
		serverQueue: hist(config.HistogramServer, metricname.ServerQueueTime, metricname.ServerQueueTimeHelp, requestLatencyBuckets),
		phases:      make(map[string]prometheus.Histogram, len(probe.Phases)),
		families:    families,
	}
	if sel.Has(config.HistogramPhases) {
		for _, ph := range probe.Phases {
			h.phases[ph] = newHistogram(k, metricname.HTTPPhase, metricname.HTTPPhaseHelp, classicBuckets(sel, fineBuckets), ph)
			families[metricname.HTTPPhase] = append(families[metricname.HTTPPhase], h.phases[ph])
		}
	}
	return h
}

// classicBuckets returns the classic boundaries of a histogram, or none
// when the probe exports native histograms only (classic_buckets: false):
// client_golang then writes no _bucket series but +Inf, and a Prometheus
// scraping protobuf stores one native series.
func classicBuckets(sel config.HistogramSelection, buckets []float64) []float64 {
	if !sel.Classic {
		return nil
	}
	return buckets
}

// newHistogram returns one native histogram series, with the given classic
// buckets too unless there are none, labelled with the pair (and phase,
// when given). Label values were checked in PairStarted.
func newHistogram(k config.PairKey, name, help string, buckets []float64, phase ...string) prometheus.Histogram {
	labels := slices.Clone(pairLabels)
	values := []string{k.Target, k.Probe, k.Replica}
	if len(phase) > 0 {
		labels = append(labels, labelPhase)
		values = append(values, phase[0])
	}
	vec := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:                            name,
		Help:                            help,
		Buckets:                         buckets,
		NativeHistogramBucketFactor:     nativeBucketFactor,
		NativeHistogramMaxBucketNumber:  nativeMaxBucketNumber,
		NativeHistogramMinResetDuration: nativeMinResetPeriod,
		NativeHistogramMaxExemplars:     nativeMaxExemplars,
		NativeHistogramExemplarTTL:      nativeExemplarTTL,
	}, labels)
	return vec.WithLabelValues(values...).(prometheus.Histogram)
}

// completed reports whether r's stream ran to its end, so whole-stream
// durations (E2EL, TPOT, decode) are meaningful.
func completed(r *probe.Result) bool {
	switch r.Disposition {
	case probe.Accepted, probe.LatencyFailure, probe.QualityFailure:
		return true
	}
	return false
}

// observe records every latency r measured (see the package comment for
// which dispositions feed which histogram).
func (h *pairHistograms) observe(r *probe.Result) {
	ex := exemplar(r.RequestID)
	whole := completed(r)
	if d, ok := r.ObservedTTFT(); ok {
		observe(h.ttft, d, ex)
	}
	for _, d := range r.ITLs {
		if d >= 0 {
			observe(h.itl, d, ex)
		}
	}
	if whole && r.TPOT > 0 {
		observe(h.tpot, r.TPOT, ex)
	}
	if d, ok := r.ObservedE2EL(); ok && (whole || r.Disposition == probe.ClientTimeout) {
		observe(h.e2el, d, ex)
	}
	if d, ok := r.ObservedTTFA(); ok {
		observe(h.ttfa, d, ex)
	}
	for name, d := range r.Phases {
		ph, ok := h.phases[name]
		if !ok || d < 0 || (name == probe.PhaseDecode && !whole) {
			continue
		}
		observe(ph, d, ex)
	}
	if !r.Sent.IsZero() {
		observe(h.lag, max(r.Lag, 0), ex)
	}
	if r.Server != nil {
		if r.Server.TTFT > 0 {
			observe(h.serverTTFT, r.Server.TTFT, ex)
		}
		if r.Server.QueueTime >= 0 {
			observe(h.serverQueue, r.Server.QueueTime, ex)
		}
	}
}

// observe records d in h, a histogram the probe did not select (nil)
// aside.
func observe(h prometheus.Histogram, d time.Duration, ex prometheus.Labels) {
	if h == nil {
		return
	}
	if eo, ok := h.(prometheus.ExemplarObserver); ok && ex != nil {
		eo.ObserveWithExemplar(d.Seconds(), ex)
		return
	}
	h.Observe(d.Seconds())
}

// exemplarMaxRunes is the OpenMetrics limit on an exemplar's label set;
// client_golang panics past it, so request ids are cut to fit.
const exemplarMaxRunes = 128

// exemplar returns the {request_id="..."} exemplar for id, or nil when id is
// empty. Invalid UTF-8 is replaced and long ids are truncated.
func exemplar(id string) prometheus.Labels {
	if id == "" {
		return nil
	}
	id = strings.ToValidUTF8(id, "?")
	room := exemplarMaxRunes - utf8.RuneCountInString(labelRequestID)
	if utf8.RuneCountInString(id) > room {
		id = string([]rune(id)[:room])
	}
	return prometheus.Labels{labelRequestID: id}
}

func (h *pairHistograms) collect(ch chan<- prometheus.Metric) {
	for _, f := range histogramFamilies {
		for _, m := range h.families[f.name] {
			ch <- m
		}
	}
}
