package collector

import (
	"bufio"
	"cmp"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"strconv"
	"sync"
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
// Joined.WriteText: the same bytes without a dto.Metric per probe series,
// and without the whole answer in memory (docs/design.md, "8. Metrics").
// Every other format, and any error of WriteText before its first byte,
// goes through promhttp, which reports an error as it always does.
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
		a, err := j.prepareText(format)
		if err != nil {
			generic.ServeHTTP(w, r)
			return
		}
		w.Header().Add("Vary", "Accept")
		w.Header().Set("Content-Type", string(format))
		a.writeTo(w) //nolint:errcheck // the client went away; nothing to tell it
	})
}

// errTwoCollectors: WriteText writes the families of one Collector.
var errTwoCollectors = errors.New("more than one Collector joined")

// WriteText writes the joined families to w in format, which must be of
// the text type (expfmt.TypeTextPlain), byte for byte as expfmt's encoder
// writes what Gather returns. A Collector's families are written from its
// pairs' text directly; the other gatherers' through expfmt, in name
// order among them. A family of one name gathered twice is an error. An
// error other than w's is returned before anything is written.
func (j *Joined) WriteText(w io.Writer, format expfmt.Format) error {
	a, err := j.prepareText(format)
	if err != nil {
		return err
	}
	return a.writeTo(w)
}

// textAnswer is a text answer ready to be written: the other gatherers'
// families encoded, and a snapshot of the Collector's pairs' text. Every
// byte of it is written already, into buffers nothing changes after, so
// it is written to a client without a lock held: a slow client holds up
// nothing but its own answer.
type textAnswer struct {
	others []byte       // the other families, encoded, in name order
	ends   []encodedEnd // where each of them ends in others
	pairs  []pairText   // the Collector's pairs' text, in the pairs' order
}

// encodedEnd is the name of one of textAnswer's other families and the
// end of its text in textAnswer.others.
type encodedEnd struct {
	name string
	end  int
}

// prepareText gathers the other families and encodes them, and takes the
// Collector's pairs' text as of now: everything of an answer that can
// fail fails here, before a byte is written.
func (j *Joined) prepareText(format expfmt.Format) (*textAnswer, error) {
	if format.FormatType() != expfmt.TypeTextPlain {
		return nil, fmt.Errorf("%s is not the text format", format)
	}
	var c *Collector
	var others []*dto.MetricFamily
	var errs prometheus.MultiError
	for _, g := range j.gs {
		if coll, ok := g.(*Collector); ok {
			if c != nil {
				return nil, errTwoCollectors
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
		return nil, err
	}
	a := &textAnswer{}
	w := &appendWriter{}
	enc := expfmt.NewEncoder(w, format)
	for _, mf := range others {
		if c != nil {
			if _, ours := slices.BinarySearchFunc(textFamilies, mf.GetName(), func(f textFamily, name string) int {
				return cmp.Compare(f.name, name)
			}); ours {
				return nil, fmt.Errorf("metric family %s gathered twice", mf.GetName())
			}
		}
		if err := enc.Encode(mf); err != nil {
			return nil, err
		}
		a.ends = append(a.ends, encodedEnd{mf.GetName(), len(w.b)})
	}
	a.others = w.b
	if c != nil {
		a.pairs = c.textSnapshot()
	}
	return a, nil
}

// writeTo writes a to w: the families in name order, each of the
// Collector's with its header and then every pair's series of it.
func (a *textAnswer) writeTo(w io.Writer) error {
	bw := textWriters.Get().(*bufio.Writer)
	defer textWriters.Put(bw)
	bw.Reset(w)
	defer bw.Reset(nil)
	written, ends := 0, a.ends // the others written so far, and the ends of the rest
	// writeBefore writes the other families named before name.
	writeBefore := func(name string) {
		end := written
		for ; len(ends) > 0 && ends[0].name < name; ends = ends[1:] {
			end = ends[0].end
		}
		bw.Write(a.others[written:end]) //nolint:errcheck // bw keeps its first error for Flush
		written = end
	}
	var header []byte
	for i, f := range textFamilies {
		writeBefore(f.name)
		started := false
		for k := range a.pairs {
			s := a.pairs[k].family(i)
			if len(s) == 0 {
				continue
			}
			if !started {
				header, started = appendHeader(header[:0], f.name, f.help, f.kind), true
				bw.Write(header) //nolint:errcheck // as above
			}
			bw.Write(s) //nolint:errcheck // as above
		}
	}
	writeBefore(maxFamilyName)
	return bw.Flush()
}

// textWriters buffer an answer's many small pieces (a pair's series of
// one family is a few hundred bytes) into writes of 32 KiB.
var textWriters = sync.Pool{New: func() any { return bufio.NewWriterSize(nil, 32<<10) }}

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

// textSnapshot returns the text of c's pairs in their order, writing
// again first that of the pairs changed since the last scrape. A pair's
// text is not changed once written (a change writes a new one), so the
// snapshot is read without c's locks.
func (c *Collector) textSnapshot() []pairText {
	c.mu.RLock()
	defer c.mu.RUnlock()
	c.textMu.Lock()
	defer c.textMu.Unlock()
	out := make([]pairText, len(c.order))
	for i, p := range c.order {
		c.textScratch = p.text.refresh(p, c.textScratch)
		out[i] = p.text
	}
	return out
}

// pairText is a pair's series in the text format, family by family, as of
// the pair's version when they were written. A scrape writes again only
// the pairs whose series changed since the last (most do not, at a few
// requests a minute per pair and a scrape every 15 s), and copies the
// others' text: ~4.5 KB per lean pair (docs/BENCHMARKS.md, "1,000 pairs").
// b and ends are not changed once written: a scrape may still be writing
// them to its client. Collector.textMu guards the fields.
type pairText struct {
	version uint64 // the pair's version it was written at, plus one; 0: never
	b       []byte
	ends    []int // the end in b of each of textFamilies
}

// refresh writes p's series again when p changed since they were, in
// scratch first (returned, for the next pair), then into a new b of
// exactly their size.
func (t *pairText) refresh(p *pairMetrics, scratch []byte) []byte {
	// Read before the flow: a change still being made bumps the
	// version after, so the next scrape writes the pair again.
	v := p.version.Load() + 1
	if t.version == v {
		return scratch
	}
	g := gathering{pairs: []*pairMetrics{p}, flows: []flow{p.flowNow()}}
	scratch = scratch[:0]
	ends := make([]int, 0, len(textFamilies))
	for _, f := range textFamilies {
		scratch = f.series(g, scratch)
		ends = append(ends, len(scratch))
	}
	t.b, t.ends, t.version = slices.Clone(scratch), ends, v
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
