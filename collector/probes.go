// Package collector turns what the prober learns into Prometheus metrics.
// The names and help texts it exports are spelled in collector/metricname,
// which rules reads too.
//
// Two collectors live here, one per file: Collector (probes.go) turns
// probe.Results into the vllm_probe_* series of every configured (target,
// probe) pair; and SelfMetrics (self.go) describes the prober itself. The
// third, collector/server's ServerScraper, scrapes each target's own
// /metrics in the background and re-exposes the vllm:* families with a
// target label. ResultRegistry
// (result.go) builds the one-request registry served by /probe.
//
// Which results feed which histogram: TTFT, ITL, the dns, connect, tls,
// headers and first_token phases, schedule lag and the server's own timings
// are observed for every request that measured them, whatever its
// disposition, so slow requests that failed an SLO show in the histograms.
// TPOT, E2EL and the decode phase describe a whole stream and are observed
// only for requests whose stream completed (accepted, latency_failure,
// quality_failure): a stream cut by an error would report a misleadingly
// short duration. A client_timeout is never dropped: it is observed in
// E2EL, and in TTFT when no token came, at the time it was abandoned
// (probe.Result.ObservedE2EL), i.e. censored at the timeout.
package collector

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vllm-prober/vllm-prober/collector/metricname"
	"github.com/vllm-prober/vllm-prober/config"
	"github.com/vllm-prober/vllm-prober/internal/logonce"
	"github.com/vllm-prober/vllm-prober/probe"
)

// Label names of probe series.
const (
	labelTarget      = "target"
	labelProbe       = "probe"
	labelReplica     = "replica" // "" for a gateway or static target: Prometheus drops it
	labelDisposition = "disposition"
	labelReason      = "reason"
	labelSLO         = "slo"
	labelCheck       = "check"
	labelPhase       = "phase"
	labelRequestID   = "request_id"
)

// Options configures a Collector.
type Options struct {
	// Logger receives warnings about results that cannot be counted; nil
	// discards them.
	Logger *slog.Logger
	// Now stamps the creation time of each pair's counters (exposed as
	// OpenMetrics _created); nil means time.Now.
	Now func() time.Time
}

// Collector turns probe.Results into the vllm_probe_* metrics. It implements
// probe.Sink and prometheus.Collector. Results for pairs it does not run
// (not started yet, or stopped) are ignored.
type Collector struct {
	logger *slog.Logger
	now    func() time.Time
	descs  probeDescs
	warned logonce.Set

	mu    sync.RWMutex
	pairs map[config.PairKey]*pairMetrics
	order []*pairMetrics // pairs sorted by key (comparePairs), for Gather

	// encodedMu guards the pairs' encoded series (pairMetrics.encoded),
	// encodedScratch, where a pair's series are encoded first, and when
	// a scrape last asked for each encoding.
	encodedMu      sync.Mutex
	encodedScratch encodeScratch
	encodedUsed    [numEncodings]time.Time
}

// pairLabels are the label names every per-pair series starts with.
var pairLabels = []string{labelTarget, labelProbe, labelReplica}

// probeDescs are the fixed descriptors of the counters and the gauge;
// histogram descriptors come from each pair's own histograms.
type probeDescs struct {
	offered, requests, failures, slo, quality, inFlight, prompt, output *prometheus.Desc
	reasoning                                                           *prometheus.Desc
	fingerprintChanges                                                  *prometheus.Desc
}

var (
	_ probe.Sink           = (*Collector)(nil)
	_ prometheus.Collector = (*Collector)(nil)
)

// New returns a Collector with no pairs; the engine starts them (probe.Sink).
func New(o Options) *Collector {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	pair := pairLabels
	with := func(l string) []string { return append(slices.Clone(pairLabels), l) }
	return &Collector{
		logger: o.Logger,
		now:    o.Now,
		warned: logonce.Set{Max: 256},
		pairs:  map[config.PairKey]*pairMetrics{},
		descs: probeDescs{
			offered:   prometheus.NewDesc(metricname.RequestsOffered, metricname.RequestsOfferedHelp, pair, nil),
			requests:  prometheus.NewDesc(metricname.Requests, metricname.RequestsHelp, with(labelDisposition), nil),
			failures:  prometheus.NewDesc(metricname.Failures, metricname.FailuresHelp, with(labelReason), nil),
			slo:       prometheus.NewDesc(metricname.SLOViolations, metricname.SLOViolationsHelp, with(labelSLO), nil),
			quality:   prometheus.NewDesc(metricname.QualityFailures, metricname.QualityFailuresHelp, with(labelCheck), nil),
			inFlight:  prometheus.NewDesc(metricname.RequestsInFlight, metricname.RequestsInFlightHelp, pair, nil),
			prompt:    prometheus.NewDesc(metricname.PromptTokens, metricname.PromptTokensHelp, pair, nil),
			output:    prometheus.NewDesc(metricname.OutputTokens, metricname.OutputTokensHelp, pair, nil),
			reasoning: prometheus.NewDesc(metricname.ReasoningTokens, metricname.ReasoningTokensHelp, pair, nil),
			fingerprintChanges: prometheus.NewDesc(metricname.OutputFingerprintChanges,
				metricname.OutputFingerprintChangesHelp, pair, nil),
		},
	}
}

// PairStarted implements probe.Sink: a new pair gets every counter at 0
// (the output fingerprint changes only when its probe has a fingerprint);
// a changed one keeps its counters, and gets new histograms when its SLO
// thresholds (which its buckets hold) or its histogram selection changed.
func (c *Collector) PairStarted(p config.Pair) {
	k := p.Key
	if !utf8.ValidString(k.Target) || !utf8.ValidString(k.Probe) || !utf8.ValidString(k.Replica) {
		c.logger.Warn("skipping pair with invalid UTF-8 name", "target", k.Target, "probe", k.Probe, "replica", k.Replica)
		return
	}
	shape := probeShape(p.Probe)
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.pairs[k]; ok {
		old.fingerprinted.Store(p.Probe.Fingerprint != nil)
		if !old.shape.equal(shape) {
			old.shape = shape
			old.hists.Store(newPairHistograms(k, shape))
		}
		old.version.Add(1)
		return
	}
	pm := newPairMetrics(k, shape, c.now())
	pm.fingerprinted.Store(p.Probe.Fingerprint != nil)
	c.pairs[k] = pm
	i, _ := slices.BinarySearchFunc(c.order, pm, comparePairs)
	c.order = slices.Insert(c.order, i, pm)
}

// PairStopped implements probe.Sink: the pair's series disappear (the
// engine tells it after the pair's last request was counted).
func (c *Collector) PairStopped(key config.PairKey) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.pairs[key]; !ok {
		return
	}
	delete(c.pairs, key)
	c.order = slices.DeleteFunc(c.order, func(p *pairMetrics) bool { return p.key == key })
}

func (c *Collector) pair(key config.PairKey) *pairMetrics {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.pairs[key]
}

// Offered implements probe.Sink.
func (c *Collector) Offered(key config.PairKey) {
	p := c.pair(key)
	if p == nil {
		c.warnOnce(msgUnknownPair, key.String(), "target", key.Target, "probe", key.Probe, "replica", key.Replica)
		return
	}
	p.offer()
}

// Finished implements probe.Sink.
func (c *Collector) Finished(r *probe.Result) {
	if r == nil {
		return
	}
	p := c.pair(r.Key())
	if p == nil {
		c.warnOnce(msgUnknownPair, r.Key().String(), "target", r.Target, "probe", r.Probe, "replica", r.Replica)
		return
	}
	if !r.Scheduled.IsZero() && r.Scheduled.Before(p.created) {
		// Offered to an earlier series of this pair, before a reload
		// removed it and a later one added it again: its offer is not in
		// this series, so counting it would break offered = sum of
		// dispositions + in flight. The ledger still has it.
		c.warnOnce(msgStaleResult, r.Key().String(), "target", r.Target, "probe", r.Probe, "replica", r.Replica)
		return
	}
	for _, bad := range p.count(r) {
		c.warnOnce("unknown label value", bad, "target", r.Target, "probe", r.Probe, "replica", r.Replica, "value", bad)
	}
	p.hists.Load().observe(r)
	p.version.Add(1)
}

// warnOnce logs an uncounted result once per key. Unknown pairs are
// expected (a removed pair's last requests finish after PairStopped
// dropped its series), so they log at debug; unknown label values are a bug, at warn.
func (c *Collector) warnOnce(msg, key string, args ...any) {
	if !c.warned.First(msg + "\x00" + key) {
		return
	}
	level := slog.LevelWarn
	if msg == msgUnknownPair || msg == msgStaleResult {
		level = slog.LevelDebug
	}
	c.logger.Log(context.Background(), level, "result not counted: "+msg, args...)
}

const (
	msgUnknownPair = "unknown pair"
	msgStaleResult = "offered before the pair was last added"
)

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	d := c.descs
	for _, desc := range []*prometheus.Desc{d.offered, d.requests, d.failures, d.slo, d.quality, d.inFlight, d.prompt, d.output, d.reasoning, d.fingerprintChanges} {
		ch <- desc
	}
	for _, desc := range histogramDescs() {
		ch <- desc
	}
}

// Collect implements prometheus.Collector.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	for _, p := range c.pairs {
		p.collectCounters(c.descs, ch)
		p.hists.Load().collect(ch)
	}
}
