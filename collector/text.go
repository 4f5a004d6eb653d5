package collector

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"

	"github.com/vllm-prober/vllm-prober/collector/metricname"
)

// MetricsHandler serves g as promhttp.HandlerFor(g, opts) does. When g is
// Join's and the client takes the text format (what Prometheus asks for
// without native histograms or OpenMetrics), the answer is written by
// Joined.AppendText: the same bytes without a dto.Metric per probe series.
// Every other format, and any error of AppendText, goes through promhttp,
// which reports an error as it always does.
func MetricsHandler(g prometheus.Gatherer, opts promhttp.HandlerOpts) http.Handler {
	generic := promhttp.HandlerFor(g, opts)
	j, ok := g.(*Joined)
	if !ok || !opts.DisableCompression || opts.Timeout > 0 || opts.MaxRequestsInFlight > 0 ||
		len(opts.AcceptedFormats) > 0 || !opts.ProcessStartTime.IsZero() {
		return generic
	}
	accepted := expfmt.DefaultAcceptedFormats()
	if opts.EnableOpenMetrics {
		accepted = expfmt.DefaultOpenMetricsAcceptedFormats()
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		format := expfmt.NegotiateAccept(r.Header, accepted...)
		if format.FormatType() != expfmt.TypeTextPlain {
			generic.ServeHTTP(w, r)
			return
		}
		body, err := j.AppendText(make([]byte, 0, j.lastSize.Load()), format)
		if err != nil {
			generic.ServeHTTP(w, r)
			return
		}
		j.lastSize.Store(int64(len(body)))
		w.Header().Add("Vary", "Accept")
		w.Header().Set("Content-Type", string(format))
		w.Write(body) //nolint:errcheck // the client went away; nothing to tell it
	})
}

// errTwoCollectors: AppendText writes the families of one Collector.
var errTwoCollectors = errors.New("more than one Collector joined")

// AppendText appends the joined families to b in format, which must be of
// the text type (expfmt.TypeTextPlain), byte for byte as expfmt's encoder
// writes what Gather returns. A Collector's families are written from its
// pairs directly; the other gatherers' through expfmt, in name order
// among them. A family of one name gathered twice is an error.
func (j *Joined) AppendText(b []byte, format expfmt.Format) ([]byte, error) {
	if format.FormatType() != expfmt.TypeTextPlain {
		return b, fmt.Errorf("%s is not the text format", format)
	}
	var c *Collector
	var others []*dto.MetricFamily
	var errs prometheus.MultiError
	for _, g := range j.gs {
		if coll, ok := g.(*Collector); ok {
			if c != nil {
				return b, errTwoCollectors
			}
			c = coll
			continue
		}
		mfs, err := g.Gather()
		if err != nil {
			errs = append(errs, err)
		}
		others = append(others, mfs...)
	}
	others, err := sortFamilies(others, errs)
	if err != nil {
		return b, err
	}
	w := &appendWriter{b: b}
	enc := expfmt.NewEncoder(w, format)
	// encodeBefore writes the other families named before name.
	encodeBefore := func(name string) error {
		for ; len(others) > 0 && others[0].GetName() < name; others = others[1:] {
			if err := enc.Encode(others[0]); err != nil {
				return err
			}
		}
		if len(others) > 0 && others[0].GetName() == name {
			return fmt.Errorf("metric family %s gathered twice", name)
		}
		return nil
	}
	if c != nil {
		if err := c.appendText(w, encodeBefore); err != nil {
			return w.b, err
		}
	}
	if err := encodeBefore(maxFamilyName); err != nil {
		return w.b, err
	}
	return w.b, nil
}

// maxFamilyName sorts after every metric family name.
const maxFamilyName = "\xff"

// textFamily is one of a Collector's families and how one pair's series
// of it are written in the text format.
type textFamily struct {
	name, help, kind string
	series           func(g gathering, b []byte) []byte
}

// textFamilies are a Collector's families in name order.
var textFamilies = func() []textFamily {
	var out []textFamily
	for _, f := range counterFamilies {
		out = append(out, textFamily{f.name, f.help, "counter", func(g gathering, b []byte) []byte { return g.appendCounters(b, f) }})
	}
	out = append(out, textFamily{metricname.RequestsInFlight, metricname.RequestsInFlightHelp, "gauge",
		func(g gathering, b []byte) []byte { return g.appendInFlight(b) }})
	for _, f := range histogramFamilies {
		out = append(out, textFamily{f.name, f.help, "histogram", func(g gathering, b []byte) []byte { return g.appendHistograms(b, f.name) }})
	}
	slices.SortFunc(out, func(a, b textFamily) int { return cmp.Compare(a.name, b.name) })
	return out
}()

// appendText writes c's families to w in name order, calling before with
// each family's name first: a family's header, then each pair's series of
// it as the pair's text cache has them.
func (c *Collector) appendText(w *appendWriter, before func(name string) error) error {
	c.mu.RLock()
	defer c.mu.RUnlock()
	c.textMu.Lock()
	defer c.textMu.Unlock()
	for _, p := range c.order {
		c.textScratch = p.text.refresh(p, c.textScratch)
	}
	for i, f := range textFamilies {
		if err := before(f.name); err != nil {
			return err
		}
		started := false
		for _, p := range c.order {
			s := p.text.family(i)
			if len(s) == 0 {
				continue
			}
			if !started {
				w.b, started = appendHeader(w.b, f.name, f.help, f.kind), true
			}
			w.b = append(w.b, s...)
		}
	}
	return nil
}

// pairText is a pair's series in the text format, family by family, as of
// the pair's version when they were written. A scrape writes again only
// the pairs whose series changed since the last (most do not, at a few
// requests a minute per pair and a scrape every 15 s), and copies the
// others' text: ~4.5 KB per lean pair (docs/BENCHMARKS.md, "1,000 pairs").
// Collector.textMu guards it.
type pairText struct {
	version uint64 // the pair's version it was written at, plus one; 0: never
	b       []byte
	ends    []int // the end in b of each of textFamilies
}

// refresh writes p's series again when p changed since they were, in
// scratch first (returned, for the next pair) so b keeps its size exactly.
func (t *pairText) refresh(p *pairMetrics, scratch []byte) []byte {
	// Read before the flow: a change still being made bumps the
	// version after, so the next scrape writes the pair again.
	v := p.version.Load() + 1
	if t.version == v {
		return scratch
	}
	g := gathering{pairs: []*pairMetrics{p}, flows: []flow{p.flowNow()}}
	scratch, t.ends = scratch[:0], t.ends[:0]
	for _, f := range textFamilies {
		scratch = f.series(g, scratch)
		t.ends = append(t.ends, len(scratch))
	}
	if cap(t.b) < len(scratch) || cap(t.b) > 2*len(scratch) {
		t.b = make([]byte, len(scratch))
	}
	t.b = append(t.b[:0], scratch...)
	t.version = v
	return scratch
}

// family returns the pair's series of textFamilies[i].
func (t *pairText) family(i int) []byte {
	start := 0
	if i > 0 {
		start = t.ends[i-1]
	}
	return t.b[start:t.ends[i]]
}

// appendCounters appends the series of counter family f, as counters
// builds them.
func (g gathering) appendCounters(b []byte, f counterFamily) []byte {
	var vals []float64
	extra, ok := extraLabelPairs[f.name]
	var scratch [4]*dto.LabelPair // a pair's three and the extra label
	for i, p := range g.pairs {
		vals = f.values(&g.flows[i], p, vals[:0])
		for j, v := range vals {
			set := p.labels.pair
			if ok {
				set = extra.appendSet(scratch[:0], p.labels.pair, j)
			}
			b = appendSample(b, f.name, "", set, "", 0, v)
		}
	}
	return b
}

// appendInFlight appends the series of the in-flight gauge family, as
// inFlight builds them.
func (g gathering) appendInFlight(b []byte) []byte {
	for i, p := range g.pairs {
		b = appendSample(b, metricname.RequestsInFlight, "", p.labels.pair, "", 0, float64(g.flows[i].inFlight))
	}
	return b
}

// appendHistograms appends the series of histogram family name, as
// histograms builds them: the classic buckets (a +Inf bucket always), the
// sum and the count. A native histogram has no other series in this format.
func (g gathering) appendHistograms(b []byte, name string) []byte {
	g.eachHistogram(name, func(m *dto.Metric) {
		hist := m.GetHistogram()
		infSeen := false
		for _, bk := range hist.GetBucket() {
			v := bk.GetCumulativeCountFloat()
			if v == 0 {
				v = float64(bk.GetCumulativeCount())
			}
			b = appendSample(b, name, "_bucket", m.Label, "le", bk.GetUpperBound(), v)
			infSeen = infSeen || math.IsInf(bk.GetUpperBound(), +1)
		}
		count := hist.GetSampleCountFloat()
		if count == 0 {
			count = float64(hist.GetSampleCount())
		}
		if !infSeen {
			b = appendSample(b, name, "_bucket", m.Label, "le", math.Inf(+1), count)
		}
		b = appendSample(b, name, "_sum", m.Label, "", 0, hist.GetSampleSum())
		b = appendSample(b, name, "_count", m.Label, "", 0, count)
	})
	return b
}

// appendHeader appends a family's HELP and TYPE lines.
func appendHeader(b []byte, name, help, kind string) []byte {
	b = append(b, "# HELP "...)
	b = append(b, name...)
	b = append(b, ' ')
	b = appendEscaped(b, help, false)
	b = append(b, "\n# TYPE "...)
	b = append(b, name...)
	b = append(b, ' ')
	b = append(b, kind...)
	return append(b, '\n')
}

// appendSample appends one sample line: name+suffix, the labels and the
// extra label (its value a number, as "le"), and the value. The names are
// the collector's own, all valid without quoting.
func appendSample(b []byte, name, suffix string, labels []*dto.LabelPair, extraName string, extraValue, v float64) []byte {
	b = append(b, name...)
	b = append(b, suffix...)
	if len(labels) > 0 || extraName != "" {
		sep := byte('{')
		for _, lp := range labels {
			b = append(b, sep)
			b = append(b, lp.GetName()...)
			b = append(b, `="`...)
			b = appendEscaped(b, lp.GetValue(), true)
			b = append(b, '"')
			sep = ','
		}
		if extraName != "" {
			b = append(b, sep)
			b = append(b, extraName...)
			b = append(b, `="`...)
			b = appendFloat(b, extraValue)
			b = append(b, '"')
		}
		b = append(b, '}')
	}
	b = append(b, ' ')
	b = appendFloat(b, v)
	return append(b, '\n')
}

// appendEscaped appends s with backslash and newline escaped, and the
// double quote too when quote is set (a label value; not a HELP text).
func appendEscaped(b []byte, s string, quote bool) []byte {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\':
			b = append(b, `\\`...)
		case c == '\n':
			b = append(b, `\n`...)
		case c == '"' && quote:
			b = append(b, `\"`...)
		default:
			b = append(b, c)
		}
	}
	return b
}

// appendFloat appends f as the text format writes a value.
func appendFloat(b []byte, f float64) []byte {
	switch {
	case f == 1:
		return append(b, '1')
	case f == 0:
		return append(b, '0')
	case f == -1:
		return append(b, "-1"...)
	case math.IsNaN(f):
		return append(b, "NaN"...)
	case math.IsInf(f, +1):
		return append(b, "+Inf"...)
	case math.IsInf(f, -1):
		return append(b, "-Inf"...)
	}
	return strconv.AppendFloat(b, f, 'g', -1, 64)
}

// appendWriter is an io.Writer (with the methods expfmt writes through
// without a buffer of its own) that appends to b.
type appendWriter struct{ b []byte }

func (w *appendWriter) Write(p []byte) (int, error) {
	w.b = append(w.b, p...)
	return len(p), nil
}

func (w *appendWriter) WriteString(s string) (int, error) {
	w.b = append(w.b, s...)
	return len(s), nil
}

func (w *appendWriter) WriteByte(c byte) error {
	w.b = append(w.b, c)
	return nil
}

func (w *appendWriter) WriteRune(r rune) (int, error) {
	n := len(w.b)
	w.b = utf8.AppendRune(w.b, r)
	return len(w.b) - n, nil
}
