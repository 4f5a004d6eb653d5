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
	for i := range counterFamilies {
		out = append(out, g.counters(&counterFamilies[i], nil))
	}
	out = append(out, g.inFlight(nil))
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

// familyBuf is the memory of a counter or gauge family's series, reused
// family after family when the pairs' series are encoded one pair at a
// time (a Gather's families are each made anew). What the family returned
// points to is valid until the next use of the buffer.
type familyBuf struct {
	mf       dto.MetricFamily
	vals     []float64
	labels   [][]*dto.LabelPair
	created  []*timestamppb.Timestamp
	slab     []*dto.LabelPair
	metrics  []dto.Metric
	counters []dto.Counter
	gauges   []dto.Gauge
	ptrs     []*dto.Metric
}

// family returns buf's family, with the name and help given (pointed
// to, not copied) and n series, their Metric structs cleared.
func (buf *familyBuf) family(name, help *string, kind dto.MetricType, n int) *dto.MetricFamily {
	buf.mf = dto.MetricFamily{Name: name, Help: help, Type: kind.Enum()}
	buf.metrics = resize(buf.metrics, n)
	buf.ptrs = resize(buf.ptrs, n)
	buf.mf.Metric = buf.ptrs
	for j := range n {
		buf.ptrs[j] = &buf.metrics[j]
	}
	return &buf.mf
}

// resize returns s with length n, cleared, reusing its array when it is
// large enough.
func resize[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	s = s[:n]
	clear(s)
	return s
}

// counters returns the counter family f, in buf (nil: made anew).
func (g gathering) counters(f *counterFamily, buf *familyBuf) *dto.MetricFamily {
	extra, ok := extraLabelPairs[f.name]
	perPair := 1 // at most one series per label set
	if ok {
		perPair = len(extra.values)
	}
	n := perPair * len(g.pairs)
	name, help := &f.name, &f.help
	if buf == nil { // a Gather's: its own copies of the strings
		buf, name, help = &familyBuf{}, new(f.name), new(f.help)
		buf.vals, buf.labels, buf.created = make([]float64, 0, n), make([][]*dto.LabelPair, 0, n), make([]*timestamppb.Timestamp, 0, n)
	}
	vals, labels, created := buf.vals[:0], buf.labels[:0], buf.created[:0]
	// The sets with the extra label, made for this family in one slab
	// rather than kept by every pair.
	slab := buf.slab[:0]
	if ok {
		slab = slices.Grow(slab, n*(len(pairLabels)+1))
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
	buf.vals, buf.labels, buf.created, buf.slab = vals, labels, created, slab
	mf := buf.family(name, help, dto.MetricType_COUNTER, len(vals))
	buf.counters = resize(buf.counters, len(vals))
	for j := range vals {
		buf.counters[j] = dto.Counter{Value: &vals[j], CreatedTimestamp: created[j]}
		buf.metrics[j] = dto.Metric{Label: labels[j], Counter: &buf.counters[j]}
	}
	return mf
}

// inFlight returns the in-flight gauge family, in buf (nil: made anew).
func (g gathering) inFlight(buf *familyBuf) *dto.MetricFamily {
	n := len(g.pairs)
	name, help := &inFlightName, &inFlightHelp
	if buf == nil { // a Gather's: its own copies of the strings
		buf, name, help = &familyBuf{}, new(inFlightName), new(inFlightHelp)
	}
	mf := buf.family(name, help, dto.MetricType_GAUGE, n)
	buf.vals, buf.gauges = resize(buf.vals, n), resize(buf.gauges, n)
	for i, p := range g.pairs {
		buf.vals[i] = float64(g.flows[i].inFlight)
		buf.gauges[i] = dto.Gauge{Value: &buf.vals[i]}
		buf.metrics[i] = dto.Metric{Label: p.labels.pair, Gauge: &buf.gauges[i]}
	}
	return mf
}

// The in-flight gauge's name and help, for familyBuf.family to point to.
var inFlightName, inFlightHelp = metricname.RequestsInFlight, metricname.RequestsInFlightHelp

// histograms returns the histogram families, each pair's series written
// by its client_golang histogram (which keeps its label pairs too).
func (g gathering) histograms() []*dto.MetricFamily {
	out := make([]*dto.MetricFamily, 0, len(histogramFamilies))
	for _, f := range histogramFamilies {
		out = append(out, g.histogram(f.name, f.help))
	}
	return out
}

// histogram returns the histogram family name.
func (g gathering) histogram(name, help string) *dto.MetricFamily {
	mf := &dto.MetricFamily{Name: new(name), Help: new(help), Type: dto.MetricType_HISTOGRAM.Enum()}
	g.eachHistogram(name, func(m *dto.Metric) { mf.Metric = append(mf.Metric, m) })
	return mf
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
// error, and its second copy is left out. Its WriteFormat writes the same
// families in the text format, OpenMetrics or protobuf from a Collector's
// pairs' series kept encoded, without building them first (exposition.go).
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
