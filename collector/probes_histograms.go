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
}

// histogramDescs returns the descriptors every pair's histograms share:
// same name, help and label names, hence the same descriptor identity.
func histogramDescs() []*prometheus.Desc {
	pair := pairLabels
	return []*prometheus.Desc{
		prometheus.NewDesc(metricname.TTFT, metricname.TTFTHelp, pair, nil),
		prometheus.NewDesc(metricname.ITL, metricname.ITLHelp, pair, nil),
		prometheus.NewDesc(metricname.TPOT, metricname.TPOTHelp, pair, nil),
		prometheus.NewDesc(metricname.E2EL, metricname.E2ELHelp, pair, nil),
		prometheus.NewDesc(metricname.TTFA, metricname.TTFAHelp, pair, nil),
		prometheus.NewDesc(metricname.HTTPPhase, metricname.HTTPPhaseHelp, append(slices.Clone(pairLabels), labelPhase), nil),
		prometheus.NewDesc(metricname.ScheduleLag, metricname.ScheduleLagHelp, pair, nil),
		prometheus.NewDesc(metricname.ServerTTFT, metricname.ServerTTFTHelp, pair, nil),
		prometheus.NewDesc(metricname.ServerQueueTime, metricname.ServerQueueTimeHelp, pair, nil),
	}
}

// newPairHistograms builds the histograms a pair's probe selected. ITL
// shares vLLM's ITL/TPOT buckets and also gets the TPOT threshold:
// per-gap and per-request token latency are judged against the same
// budget by people reading them.
func newPairHistograms(k config.PairKey, s histogramShape) *pairHistograms {
	th, sel := s.th, s.sel
	hist := func(kind, name, help string, buckets []float64) prometheus.Histogram {
		if !sel.Has(kind) {
			return nil
		}
		return newHistogram(k, name, help, classicBuckets(sel, buckets))
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
	}
	if sel.Has(config.HistogramPhases) {
		for _, ph := range probe.Phases {
			h.phases[ph] = newHistogram(k, metricname.HTTPPhase, metricname.HTTPPhaseHelp, classicBuckets(sel, fineBuckets), ph)
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
	for _, m := range []prometheus.Histogram{h.ttft, h.itl, h.tpot, h.e2el, h.ttfa, h.lag, h.serverTTFT, h.serverQueue} {
		if m != nil {
			ch <- m
		}
	}
	for _, ph := range probe.Phases {
		if m, ok := h.phases[ph]; ok {
			ch <- m
		}
	}
}
