package collector

import (
	"bufio"
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/vllm-prober/vllm-prober/collector/metricname"
)

// MetricsHandler serves g as promhttp.HandlerFor(g, opts) does. When g is
// Join's and the client takes the text format (curl's and Go's default),
// OpenMetrics 1.0 (Prometheus's default) or delimited protobuf (Prometheus
// with native histograms), the answer is written by Joined.WriteFormat:
// the same bytes, from each pair's series kept encoded since the last
// scrape, never whole in memory (docs/design.md, "8. Metrics"). Every
// other format, a request naming families (name[]), and any error of
// WriteFormat before its first byte go through promhttp, which reports an
// error as it always does.
func MetricsHandler(g prometheus.Gatherer, opts promhttp.HandlerOpts) http.Handler {
	generic := promhttp.HandlerFor(g, opts)
	j, ok := g.(*Joined)
	if !ok || !opts.DisableCompression || opts.Timeout > 0 || opts.MaxRequestsInFlight > 0 ||
		len(opts.AcceptedFormats) > 0 || !opts.ProcessStartTime.IsZero() || opts.EnableOpenMetricsTextCreatedSamples {
		return generic
	}
	accepted := expfmt.DefaultAcceptedFormats()
	if opts.EnableOpenMetrics {
		accepted = expfmt.DefaultOpenMetricsAcceptedFormats()
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		format := expfmt.NegotiateAccept(r.Header, accepted...)
		if _, ok := encodingOf(format); !ok || (r.URL != nil && r.URL.Query().Has("name[]")) {
			generic.ServeHTTP(w, r)
			return
		}
		a, err := j.prepare(format)
		if err != nil {
			generic.ServeHTTP(w, r)
			return
		}
		w.Header().Add("Vary", "Accept")
		w.Header().Set("Content-Type", string(format))
		a.writeTo(w) //nolint:errcheck // the client went away; nothing to tell it
	})
}

// encoding is a format a Collector's pairs keep their series encoded in.
type encoding uint8

const (
	encText        encoding = iota // the text format, versions 0.0.4 and 1.0.0
	encOpenMetrics                 // OpenMetrics 0.0.1 and 1.0.0
	encProtobuf                    // delimited protobuf
	numEncodings
)

// encodingOf returns the encoding of format, if it is one pairs keep.
func encodingOf(format expfmt.Format) (encoding, bool) {
	switch format.FormatType() {
	case expfmt.TypeTextPlain:
		return encText, true
	case expfmt.TypeOpenMetrics:
		switch format.Version() {
		case "", expfmt.OpenMetricsVersion_0_0_1, expfmt.OpenMetricsVersion_1_0_0:
			return encOpenMetrics, true
		}
	case expfmt.TypeProtoDelim:
		return encProtobuf, true
	}
	return 0, false
}

// encodedKeep is how long the pairs keep their series encoded in a format
// no scrape has asked for since: the longest scrape interval we plan for
// (as nativeExemplarTTL), so each of two scrapers that ask for different
// formats finds its own kept, and one curl's text goes with the next
// scrape after it, not held beside the scraper's (~4.5 MB at 1,000 pairs).
const encodedKeep = 2 * time.Minute

// errTwoCollectors: WriteFormat writes the families of one Collector.
var errTwoCollectors = errors.New("more than one Collector joined")

// WriteFormat writes the joined families to w in format (the text format,
// OpenMetrics 1.0 or delimited protobuf), byte for byte as expfmt's
// encoder writes what Gather returns, and closes it. A Collector's
// families are written from its pairs' encoded series directly; the other
// gatherers' through expfmt, in name order among them. A family of one
// name gathered twice is an error. An error other than w's is returned
// before anything is written.
func (j *Joined) WriteFormat(w io.Writer, format expfmt.Format) error {
	a, err := j.prepare(format)
	if err != nil {
		return err
	}
	return a.writeTo(w)
}

// answer is an answer ready to be written: the other gatherers' families
// encoded, and a snapshot of the Collector's pairs' encoded series. Every
// byte of it is written already, into buffers nothing changes after, so
// it is written to a client without a lock held: a slow client holds up
// nothing but its own answer.
type answer struct {
	enc     encoding
	others  []byte       // the other families, encoded, in name order
	ends    []encodedEnd // where each of them ends in others
	trailer []byte       // what the encoder writes when closed (OpenMetrics: "# EOF")
	pairs   []pairEncoded
}

// encodedEnd is the name of one of answer's other families and the end of
// its encoding in answer.others.
type encodedEnd struct {
	name string
	end  int
}

// prepare gathers the other families and encodes them, and takes the
// Collector's pairs' encoded series as of now: everything of an answer
// that can fail fails here, before a byte is written.
func (j *Joined) prepare(format expfmt.Format) (*answer, error) {
	e, ok := encodingOf(format)
	if !ok {
		return nil, fmt.Errorf("%s is not a format the pairs are kept in", format)
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
	a := &answer{enc: e}
	w := &appendWriter{}
	enc := expfmt.NewEncoder(w, format)
	for _, mf := range others {
		if c != nil {
			if _, ours := slices.BinarySearchFunc(exposedFamilies, mf.GetName(), func(f exposedFamily, name string) int {
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
	n := len(w.b)
	if closer, ok := enc.(expfmt.Closer); ok {
		if err := closer.Close(); err != nil {
			return nil, err
		}
	}
	a.others, a.trailer = w.b[:n], w.b[n:]
	if c != nil {
		if a.pairs, err = c.encodedSnapshot(e); err != nil {
			return nil, err
		}
	}
	return a, nil
}

// writeTo writes a to w: the families in name order, each of the
// Collector's with its header and then every pair's series of it, and
// the encoder's trailer.
func (a *answer) writeTo(w io.Writer) error {
	bw := answerWriters.Get().(*bufio.Writer)
	defer answerWriters.Put(bw)
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
	for i, f := range exposedFamilies {
		writeBefore(f.name)
		size := 0
		for k := range a.pairs {
			size += len(a.pairs[k].family(i))
		}
		if size == 0 { // a family without a series is left out, as Gather leaves it
			continue
		}
		header = f.appendHeader(header[:0], a.enc, size)
		bw.Write(header) //nolint:errcheck // as above
		for k := range a.pairs {
			bw.Write(a.pairs[k].family(i)) //nolint:errcheck // as above
		}
	}
	writeBefore(maxFamilyName)
	bw.Write(a.trailer) //nolint:errcheck // as above
	return bw.Flush()
}

// answerWriters buffer an answer's many small pieces (a pair's series of
// one family is a few hundred bytes) into writes of 32 KiB.
var answerWriters = sync.Pool{New: func() any { return bufio.NewWriterSize(nil, 32<<10) }}

// maxFamilyName sorts after every metric family name.
const maxFamilyName = "\xff"

// exposedFamily is one of a Collector's families and how one pair's
// series of it are encoded.
type exposedFamily struct {
	name, help string
	kind       dto.MetricType
	// text appends a pair's series in the text format, written here;
	// family builds them as Gather does, for the other encodings.
	text   func(g gathering, b []byte) []byte
	family func(g gathering, buf *familyBuf) *dto.MetricFamily
	// headers are what comes before the series in each encoding: the
	// HELP and TYPE lines, or the family's fields but its series (a
	// protobuf family is also preceded by its length).
	headers [numEncodings][]byte
}

// exposedFamilies are a Collector's families in name order.
var exposedFamilies = func() []exposedFamily {
	var out []exposedFamily
	for i := range counterFamilies {
		f := &counterFamilies[i]
		out = append(out, exposedFamily{name: f.name, help: f.help, kind: dto.MetricType_COUNTER,
			text:   func(g gathering, b []byte) []byte { return g.appendCounters(b, *f) },
			family: func(g gathering, buf *familyBuf) *dto.MetricFamily { return g.counters(f, buf) }})
	}
	out = append(out, exposedFamily{name: metricname.RequestsInFlight, help: metricname.RequestsInFlightHelp, kind: dto.MetricType_GAUGE,
		text:   func(g gathering, b []byte) []byte { return g.appendInFlight(b) },
		family: func(g gathering, buf *familyBuf) *dto.MetricFamily { return g.inFlight(buf) }})
	for _, f := range histogramFamilies {
		out = append(out, exposedFamily{name: f.name, help: f.help, kind: dto.MetricType_HISTOGRAM,
			text:   func(g gathering, b []byte) []byte { return g.appendHistograms(b, f.name) },
			family: func(g gathering, _ *familyBuf) *dto.MetricFamily { return g.histogram(f.name, f.help) }})
	}
	slices.SortFunc(out, func(a, b exposedFamily) int { return cmp.Compare(a.name, b.name) })
	for i := range out {
		f := &out[i]
		mf := &dto.MetricFamily{Name: &f.name, Help: &f.help, Type: &f.kind}
		f.headers[encText] = appendHeader(nil, f.name, f.help, strings.ToLower(f.kind.String()))
		om := &appendWriter{}
		if _, err := expfmt.MetricFamilyToOpenMetrics(om, mf); err != nil {
			panic(fmt.Sprintf("OpenMetrics header of %s: %v", f.name, err)) // the families are ours: a bug
		}
		f.headers[encOpenMetrics] = om.b
		pb, err := proto.Marshal(mf)
		if err != nil {
			panic(fmt.Sprintf("protobuf header of %s: %v", f.name, err)) // as above
		}
		f.headers[encProtobuf] = pb
	}
	return out
}()

// appendHeader appends what comes before the family's series of size
// bytes in encoding e.
func (f *exposedFamily) appendHeader(b []byte, e encoding, size int) []byte {
	if e == encProtobuf {
		b = protowire.AppendVarint(b, uint64(len(f.headers[e])+size))
	}
	return append(b, f.headers[e]...)
}

// appendSeries appends a pair's series of f (g has the one pair) in
// encoding e: as expfmt encodes them, without the family's header. A
// counter or gauge family is built in buf.
func (f *exposedFamily) appendSeries(b []byte, e encoding, g gathering, buf *familyBuf) ([]byte, error) {
	switch e {
	case encText:
		return f.text(g, b), nil
	case encOpenMetrics:
		mf := f.family(g, buf)
		if len(mf.Metric) == 0 {
			return b, nil
		}
		start := len(b)
		w := &appendWriter{b: b}
		if _, err := expfmt.MetricFamilyToOpenMetrics(w, mf); err != nil {
			return b, err
		}
		header := f.headers[encOpenMetrics]
		if !bytes.HasPrefix(w.b[start:], header) {
			return b, fmt.Errorf("OpenMetrics encoding of %s does not start with its header", f.name)
		}
		return append(w.b[:start], w.b[start+len(header):]...), nil
	case encProtobuf:
		// A family's series are its repeated field metric, one after another.
		for _, m := range f.family(g, buf).Metric {
			b = protowire.AppendTag(b, metricField, protowire.BytesType)
			b = protowire.AppendVarint(b, uint64(proto.Size(m)))
			var err error
			if b, err = (proto.MarshalOptions{UseCachedSize: true}).MarshalAppend(b, m); err != nil {
				return b, err
			}
		}
		return b, nil
	}
	return b, fmt.Errorf("unknown encoding %d", e)
}

// metricField is the number of MetricFamily's field metric, its series.
var metricField = (&dto.MetricFamily{}).ProtoReflect().Descriptor().Fields().ByName("metric").Number()

// encodedSnapshot returns c's pairs' series encoded in e, in the pairs'
// order, encoding again first those of the pairs changed since the last
// scrape in e. A pair's encoded series are not changed once written (a
// change writes new ones), so the snapshot is read without c's locks. The
// encodings no scrape asked for in encodedKeep are dropped.
func (c *Collector) encodedSnapshot(e encoding) ([]pairEncoded, error) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	c.encodedMu.Lock()
	defer c.encodedMu.Unlock()
	now := c.now()
	c.encodedUsed[e] = now
	var drop [numEncodings]bool
	for o, used := range c.encodedUsed {
		if !used.IsZero() && now.Sub(used) > encodedKeep {
			drop[o], c.encodedUsed[o] = true, time.Time{}
		}
	}
	out := make([]pairEncoded, len(c.order))
	for i, p := range c.order {
		for o := range drop {
			if drop[o] {
				p.encoded[o] = pairEncoded{}
			}
		}
		if err := p.encoded[e].refresh(p, e, &c.encodedScratch); err != nil {
			return nil, fmt.Errorf("pair %s/%s/%s: %w", p.key.Target, p.key.Probe, p.key.Replica, err)
		}
		out[i] = p.encoded[e]
	}
	return out, nil
}

// pairEncoded is a pair's series in one encoding, family by family, as of
// the pair's version when they were written. A scrape encodes again only
// the pairs whose series changed since the last (most do not, at a few
// requests a minute per pair and a scrape every 15 s), and copies the
// others': ~4.5 KB per lean pair (docs/BENCHMARKS.md, "1,000 pairs").
// b and ends are not changed once written: a scrape may still be writing
// them to its client. Collector.encodedMu guards the fields.
type pairEncoded struct {
	version uint64 // the pair's version it was written at, plus one; 0: never
	b       []byte
	ends    []int // the end in b of each of exposedFamilies
}

// encodeScratch is where a pair's series are encoded before they are
// copied into their own buffer, reused pair after pair.
type encodeScratch struct {
	b   []byte
	fam familyBuf
}

// refresh encodes p's series in e again when p changed since they were,
// in s first, then into a new b of exactly their size.
func (t *pairEncoded) refresh(p *pairMetrics, e encoding, s *encodeScratch) error {
	// Read before the flow: a change still being made bumps the
	// version after, so the next scrape writes the pair again.
	v := p.version.Load() + 1
	if t.version == v {
		return nil
	}
	g := gathering{pairs: []*pairMetrics{p}, flows: []flow{p.flowNow()}}
	s.b = s.b[:0]
	ends := make([]int, 0, len(exposedFamilies))
	for i := range exposedFamilies {
		var err error
		if s.b, err = exposedFamilies[i].appendSeries(s.b, e, g, &s.fam); err != nil {
			return err
		}
		ends = append(ends, len(s.b))
	}
	*t = pairEncoded{version: v, b: slices.Clone(s.b), ends: ends}
	return nil
}

// family returns the pair's series of exposedFamilies[i].
func (t *pairEncoded) family(i int) []byte {
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
