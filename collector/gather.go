package collector

import (
	"cmp"
	"fmt"
	"slices"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/vllm-prober/vllm-prober/collector/metricname"
	"github.com/vllm-prober/vllm-prober/config"
	"github.com/vllm-prober/vllm-prober/probe"
)

// Gather implements prometheus.Gatherer: the same families and series as
// Collect gives a registry, built directly. A prober with 1,000 pairs has
// ~45,000 probe series, and a registry's Gather spends most of its time
// on them: a constant metric allocated per series, its labels checked,
// the family sorted by label values. Here each pair's label pairs are
// made once when it starts and shared by every scrape, a family's series
// are allocated together, and they come in the pairs' order (target,
// probe, replica), so nothing is sorted per scrape. The daemon serves it
// next to its registry through Join.
func (c *Collector) Gather() ([]*dto.MetricFamily, error) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	g := c.gatheringNow()
	out := make([]*dto.MetricFamily, 0, len(counterFamilies)+1+len(histogramFamilies))
	for _, f := range counterFamilies {
		out = append(out, g.counters(f))
	}
	out = append(out, g.inFlight())
	out = append(out, g.histograms()...)
	// Families without a series are left out, and the rest sorted by name,
	// as a registry gathers them.
	out = slices.DeleteFunc(out, func(mf *dto.MetricFamily) bool { return len(mf.Metric) == 0 })
	slices.SortFunc(out, func(a, b *dto.MetricFamily) int { return cmp.Compare(a.GetName(), b.GetName()) })
	return out, nil
}

// counterFamily is one counter family of the probe series: values appends
// a pair's values in the order of its label pairs for the family.
type counterFamily struct {
	name, help string
	values     func(f *flow, p *pairMetrics, v []float64) []float64
}

// counterFamilies are the counter families of the probe series.
var counterFamilies = []counterFamily{
	{metricname.RequestsOffered, metricname.RequestsOfferedHelp, func(f *flow, _ *pairMetrics, v []float64) []float64 {
		return append(v, float64(f.offered))
	}},
	{metricname.Requests, metricname.RequestsHelp, func(f *flow, _ *pairMetrics, v []float64) []float64 {
		for _, n := range f.finished {
			v = append(v, float64(n))
		}
		return v
	}},
	{metricname.Failures, metricname.FailuresHelp, func(_ *flow, p *pairMetrics, v []float64) []float64 { return loadAll(v, p.reasons) }},
	{metricname.SLOViolations, metricname.SLOViolationsHelp, func(_ *flow, p *pairMetrics, v []float64) []float64 { return loadAll(v, p.slos) }},
	{metricname.QualityFailures, metricname.QualityFailuresHelp, func(_ *flow, p *pairMetrics, v []float64) []float64 { return loadAll(v, p.checks) }},
	{metricname.PromptTokens, metricname.PromptTokensHelp, func(_ *flow, p *pairMetrics, v []float64) []float64 {
		return append(v, float64(p.promptTokens.Load()))
	}},
	{metricname.OutputTokens, metricname.OutputTokensHelp, func(_ *flow, p *pairMetrics, v []float64) []float64 {
		return append(v, float64(p.outputTokens.Load()))
	}},
	{metricname.ReasoningTokens, metricname.ReasoningTokensHelp, func(_ *flow, p *pairMetrics, v []float64) []float64 {
		return append(v, float64(p.reasoning.Load()))
	}},
	{metricname.OutputFingerprintChanges, metricname.OutputFingerprintChangesHelp, func(_ *flow, p *pairMetrics, v []float64) []float64 {
		if !p.fingerprinted.Load() {
			return v
		}
		return append(v, float64(p.fingerprintChanges.Load()))
	}},
}

// gatheringNow reads every pair's flow once for one Gather or one text
// exposition; c.mu is held.
func (c *Collector) gatheringNow() gathering {
	g := gathering{pairs: c.order, flows: make([]flow, len(c.order))}
	for i, p := range c.order {
		g.flows[i] = p.flowNow()
	}
	return g
}

// gathering builds the families of one Gather over the pairs in order.
type gathering struct {
	pairs []*pairMetrics
	flows []flow // each pair's, read once for every family
}

// loadAll appends the values of counters to v.
func loadAll(v []float64, counters []atomic.Uint64) []float64 {
	for i := range counters {
		v = append(v, float64(counters[i].Load()))
	}
	return v
}

// counters returns the counter family f.
func (g gathering) counters(f counterFamily) *dto.MetricFamily {
	name, help := f.name, f.help
	mf := &dto.MetricFamily{Name: &name, Help: &help, Type: dto.MetricType_COUNTER.Enum()}
	extra, ok := extraLabelPairs[name]
	perPair := 1 // at most one series per label set
	if ok {
		perPair = len(extra.values)
	}
	n := perPair * len(g.pairs)
	vals, labels, created := make([]float64, 0, n), make([][]*dto.LabelPair, 0, n), make([]*timestamppb.Timestamp, 0, n)
	// The sets with the extra label, made for this Gather in one slab
	// rather than kept by every pair.
	var slab []*dto.LabelPair
	if ok {
		slab = make([]*dto.LabelPair, 0, n*(len(pairLabels)+1))
	}
	for i, p := range g.pairs {
		start := len(vals)
		vals = f.values(&g.flows[i], p, vals)
		for j := range len(vals) - start {
			set := p.labels.pair
			if ok {
				from := len(slab)
				slab = extra.appendSet(slab, p.labels.pair, j)
				set = slab[from:len(slab):len(slab)]
			}
			labels, created = append(labels, set), append(created, p.labels.created)
		}
	}
	metrics, counters := make([]dto.Metric, len(vals)), make([]dto.Counter, len(vals))
	mf.Metric = make([]*dto.Metric, len(vals))
	for j := range vals {
		counters[j] = dto.Counter{Value: &vals[j], CreatedTimestamp: created[j]}
		metrics[j] = dto.Metric{Label: labels[j], Counter: &counters[j]}
		mf.Metric[j] = &metrics[j]
	}
	return mf
}

// inFlight returns the in-flight gauge family.
func (g gathering) inFlight() *dto.MetricFamily {
	name, help := metricname.RequestsInFlight, metricname.RequestsInFlightHelp
	mf := &dto.MetricFamily{Name: &name, Help: &help, Type: dto.MetricType_GAUGE.Enum()}
	n := len(g.pairs)
	metrics, gauges, vals := make([]dto.Metric, n), make([]dto.Gauge, n), make([]float64, n)
	mf.Metric = make([]*dto.Metric, n)
	for i, p := range g.pairs {
		vals[i] = float64(g.flows[i].inFlight)
		gauges[i] = dto.Gauge{Value: &vals[i]}
		metrics[i] = dto.Metric{Label: p.labels.pair, Gauge: &gauges[i]}
		mf.Metric[i] = &metrics[i]
	}
	return mf
}

// histograms returns the histogram families, each pair's series written
// by its client_golang histogram (which keeps its label pairs too).
func (g gathering) histograms() []*dto.MetricFamily {
	out := make([]*dto.MetricFamily, 0, len(histogramFamilies))
	for _, f := range histogramFamilies {
		mf := &dto.MetricFamily{Name: new(f.name), Help: new(f.help), Type: dto.MetricType_HISTOGRAM.Enum()}
		g.eachHistogram(f.name, func(m *dto.Metric) { mf.Metric = append(mf.Metric, m) })
		out = append(out, mf)
	}
	return out
}

// eachHistogram calls f with each pair's series of histogram family name
// in the pairs' order, as its client_golang histogram writes it (label
// pairs included); histograms and appendHistograms both read them so.
func (g gathering) eachHistogram(name string, f func(*dto.Metric)) {
	for _, p := range g.pairs {
		for _, h := range p.hists.Load().families[name] {
			m := &dto.Metric{}
			if err := h.Write(m); err == nil {
				f(m)
			}
		}
	}
}

// pairLabelPairs are one pair's own label pairs, sorted by name as a
// registry sorts them, made once when the pair starts. The sets of a
// counter family with an extra label are made from them as a Gather or a
// text exposition writes the family (extraLabel.appendSet): kept by every
// pair, they were ~2.4 KB of its ~7.8 (TestCollectorBytesPerLeanPair).
type pairLabelPairs struct {
	pair    []*dto.LabelPair       // target, probe, replica
	created *timestamppb.Timestamp // the counters' creation time
}

// extraLabel is the extra label of a counter family: its label pair for
// each known value, in the order the pair's counters hold them
// (probes_pair.go), and where it goes among a pair's sorted label pairs.
type extraLabel struct {
	values []*dto.LabelPair
	at     int
}

// appendSet appends to dst the label pairs of a pair's series j of the
// family, pair's own with the extra label's value j, sorted by name.
func (e extraLabel) appendSet(dst, pair []*dto.LabelPair, j int) []*dto.LabelPair {
	dst = append(dst, pair[:e.at]...)
	dst = append(dst, e.values[j])
	return append(dst, pair[e.at:]...)
}

// extraLabelPairs are the extra labels of the counter families that have
// one, shared by every pair.
var extraLabelPairs = func() map[string]extraLabel {
	out := map[string]extraLabel{}
	add := func(family, label string, values []string) {
		names := append(slices.Clone(pairLabels), label)
		slices.Sort(names)
		e := extraLabel{at: slices.Index(names, label)}
		for _, v := range values {
			e.values = append(e.values, &dto.LabelPair{Name: new(label), Value: new(v)})
		}
		out[family] = e
	}
	dispositions := make([]string, len(probe.Dispositions))
	for i, d := range probe.Dispositions {
		dispositions[i] = string(d)
	}
	add(metricname.Requests, labelDisposition, dispositions)
	add(metricname.Failures, labelReason, probe.Reasons)
	add(metricname.SLOViolations, labelSLO, probe.SLOs)
	add(metricname.QualityFailures, labelCheck, probe.Checks)
	return out
}()

// newPairLabelPairs makes the label pairs of p's series.
func newPairLabelPairs(p *pairMetrics) *pairLabelPairs {
	k := p.key
	return &pairLabelPairs{created: timestamppb.New(p.created), pair: slices.SortedFunc(slices.Values([]*dto.LabelPair{
		{Name: new(labelTarget), Value: new(k.Target)},
		{Name: new(labelProbe), Value: new(k.Probe)},
		{Name: new(labelReplica), Value: new(k.Replica)},
	}), func(a, b *dto.LabelPair) int { return cmp.Compare(a.GetName(), b.GetName()) })}
}

// comparePairs orders pairs by target, probe and replica.
func comparePairs(a, b *pairMetrics) int { return compareKeys(a.key, b.key) }

func compareKeys(a, b config.PairKey) int {
	return cmp.Or(cmp.Compare(a.Target, b.Target), cmp.Compare(a.Probe, b.Probe), cmp.Compare(a.Replica, b.Replica))
}

// Join returns a Gatherer of the families of every one of gs, sorted by
// name. Unlike prometheus.Gatherers it does not check every series again
// nor merge families of one name: a Registry checks its own series and
// Collector.Gather builds its own consistently, so the daemon joins the
// two without paying for the checks twice. A family gathered twice is an
// error, and its second copy is left out. Its WriteText writes the same
// families in the text format without building a Collector's series
// first (text.go).
func Join(gs ...prometheus.Gatherer) *Joined { return &Joined{gs: gs} }

// Joined is the Gatherer Join returns.
type Joined struct {
	gs []prometheus.Gatherer
}

// Gather implements prometheus.Gatherer.
func (j *Joined) Gather() ([]*dto.MetricFamily, error) {
	var out []*dto.MetricFamily
	var errs prometheus.MultiError
	for _, g := range j.gs {
		mfs, err := g.Gather()
		if err != nil {
			errs = append(errs, err)
		}
		out = append(out, mfs...)
	}
	return sortFamilies(out, errs)
}

// sortFamilies sorts mfs by name and leaves out the second copy of a
// family, adding an error for it to errs.
func sortFamilies(mfs []*dto.MetricFamily, errs prometheus.MultiError) ([]*dto.MetricFamily, error) {
	slices.SortStableFunc(mfs, func(a, b *dto.MetricFamily) int { return cmp.Compare(a.GetName(), b.GetName()) })
	mfs = slices.CompactFunc(mfs, func(a, b *dto.MetricFamily) bool {
		if a.GetName() != b.GetName() {
			return false
		}
		errs = append(errs, fmt.Errorf("metric family %s gathered twice", a.GetName()))
		return true
	})
	return mfs, errs.MaybeUnwrap()
}
