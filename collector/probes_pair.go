package collector

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vllm-prober/vllm-prober/config"
	"github.com/vllm-prober/vllm-prober/probe"
)

// Indexes of the known label values, so a pair's counters are plain arrays.
var (
	dispositionIndex = indexOf(probe.Dispositions)
	reasonIndex      = indexOf(probe.Reasons)
	sloIndex         = indexOf(probe.SLOs)
	checkIndex       = indexOf(probe.Checks)
)

func indexOf[T comparable](values []T) map[T]int {
	m := make(map[T]int, len(values))
	for i, v := range values {
		m[v] = i
	}
	return m
}

// pairMetrics holds the series of one (target, probe) pair. Counters are
// atomics so Finished never waits for a scrape.
type pairMetrics struct {
	key     config.PairKey
	shape   histogramShape // what its histograms were built with; guarded by Collector.mu
	created time.Time

	// flow guards offered, inFlight and dispositions together, so a scrape
	// sees offered = sum of dispositions + in flight exactly.
	flow         sync.Mutex
	offered      atomic.Uint64
	inFlight     atomic.Int64
	dispositions []atomic.Uint64
	reasons      []atomic.Uint64
	slos         []atomic.Uint64
	checks       []atomic.Uint64
	promptTokens atomic.Uint64
	outputTokens atomic.Uint64
	reasoning    atomic.Uint64 // reasoning tokens
	// fingerprinted says the pair's probe has a fingerprint, whose
	// changes it then exports.
	fingerprinted      atomic.Bool
	fingerprintChanges atomic.Uint64

	hists atomic.Pointer[pairHistograms]
	// labels are the label pairs of its series, for Gather.
	labels *pairLabelPairs

	// version counts the changes to its series; each is counted after
	// it is made (offer, Collector.Finished and PairStarted).
	version atomic.Uint64
	encoded [numEncodings]pairEncoded // for the scrapes, in each encoding asked for
}

func newPairMetrics(k config.PairKey, shape histogramShape, created time.Time) *pairMetrics {
	p := &pairMetrics{
		key:          k,
		shape:        shape,
		created:      created,
		dispositions: make([]atomic.Uint64, len(probe.Dispositions)),
		reasons:      make([]atomic.Uint64, len(probe.Reasons)),
		slos:         make([]atomic.Uint64, len(probe.SLOs)),
		checks:       make([]atomic.Uint64, len(probe.Checks)),
	}
	p.hists.Store(newPairHistograms(k, shape))
	p.labels = newPairLabelPairs(p)
	return p
}

// offer counts one offered request.
func (p *pairMetrics) offer() {
	p.flow.Lock()
	p.offered.Add(1)
	p.inFlight.Add(1)
	p.flow.Unlock()
	p.version.Add(1)
}

// count adds r to the counters and returns the label values it could not
// count because they are not in the known sets.
func (p *pairMetrics) count(r *probe.Result) (unknown []string) {
	p.flow.Lock()
	p.inFlight.Add(-1)
	if i, ok := dispositionIndex[r.Disposition]; ok {
		p.dispositions[i].Add(1)
	} else {
		unknown = append(unknown, "disposition="+string(r.Disposition))
	}
	p.flow.Unlock()
	if r.Disposition != probe.Accepted && r.Reason != "" {
		if i, ok := reasonIndex[r.Reason]; ok {
			p.reasons[i].Add(1)
		} else {
			unknown = append(unknown, "reason="+r.Reason)
		}
	}
	for _, s := range r.SLOViolations {
		if i, ok := sloIndex[s]; ok {
			p.slos[i].Add(1)
		} else {
			unknown = append(unknown, "slo="+s)
		}
	}
	for _, s := range r.QualityFailures {
		if i, ok := checkIndex[s]; ok {
			p.checks[i].Add(1)
		} else {
			unknown = append(unknown, "check="+s)
		}
	}
	if r.PromptTokens > 0 {
		p.promptTokens.Add(uint64(r.PromptTokens))
	}
	if r.OutputTokens > 0 {
		p.outputTokens.Add(uint64(r.OutputTokens))
	}
	if r.ReasoningTokens > 0 {
		p.reasoning.Add(uint64(r.ReasoningTokens))
	}
	if r.Fingerprint != nil && r.Fingerprint.Changed {
		p.fingerprintChanges.Add(1)
	}
	return unknown
}

// flow is a pair's offered, in-flight and finished counts read together,
// so offered = Σ finished + in flight.
type flow struct {
	offered  uint64
	inFlight int64
	finished []uint64 // by index in probe.Dispositions
}

// flowNow reads the pair's flow under its lock.
func (p *pairMetrics) flowNow() flow {
	f := flow{finished: make([]uint64, len(probe.Dispositions))}
	p.flow.Lock()
	defer p.flow.Unlock()
	f.offered, f.inFlight = p.offered.Load(), p.inFlight.Load()
	for i := range f.finished {
		f.finished[i] = p.dispositions[i].Load()
	}
	return f
}

func (p *pairMetrics) collectCounters(d probeDescs, ch chan<- prometheus.Metric) {
	t, pr, rep := p.key.Target, p.key.Probe, p.key.Replica
	counter := func(desc *prometheus.Desc, v uint64, extra ...string) {
		m, err := prometheus.NewConstMetricWithCreatedTimestamp(desc, prometheus.CounterValue, float64(v), p.created, append([]string{t, pr, rep}, extra...)...)
		if err == nil {
			ch <- m
		}
	}
	f := p.flowNow()
	counter(d.offered, f.offered)
	for i, v := range probe.Dispositions {
		counter(d.requests, f.finished[i], string(v))
	}
	for i, v := range probe.Reasons {
		counter(d.failures, p.reasons[i].Load(), v)
	}
	for i, v := range probe.SLOs {
		counter(d.slo, p.slos[i].Load(), v)
	}
	for i, v := range probe.Checks {
		counter(d.quality, p.checks[i].Load(), v)
	}
	counter(d.prompt, p.promptTokens.Load())
	counter(d.output, p.outputTokens.Load())
	counter(d.reasoning, p.reasoning.Load())
	if p.fingerprinted.Load() {
		counter(d.fingerprintChanges, p.fingerprintChanges.Load())
	}
	if m, err := prometheus.NewConstMetric(d.inFlight, prometheus.GaugeValue, float64(f.inFlight), t, pr, rep); err == nil {
		ch <- m
	}
}
