// Package promtext fetches a Prometheus text exposition (a /metrics page)
// and parses it into metric families, for the tests and tools that read
// what the daemon or the simulator exports; it also encodes families in
// the text format and measures gathering for the collectors' benchmarks.
package promtext

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"net/http"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Labels returns the labels of m by name.
func Labels(m *dto.Metric) map[string]string {
	out := make(map[string]string, len(m.GetLabel()))
	for _, l := range m.GetLabel() {
		out[l.GetName()] = l.GetValue()
	}
	return out
}

// Fetch gets url and parses the answer into metric families by name.
func Fetch(url string) (map[string]*dto.MetricFamily, error) {
	resp, err := http.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("scrape %s: status %s", url, resp.Status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("parse %s: %w", url, err)
	}
	return fams, nil
}

// Scrape is Fetch for tests: a failed fetch ends the test.
func Scrape(t testing.TB, url string) map[string]*dto.MetricFamily {
	t.Helper()
	fams, err := Fetch(url)
	if err != nil {
		t.Fatal(err)
	}
	return fams
}

// Encode writes mfs in the classic text format.
func Encode(w io.Writer, mfs []*dto.MetricFamily) error {
	enc := expfmt.NewEncoder(w, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, mf := range mfs {
		if err := enc.Encode(mf); err != nil {
			return fmt.Errorf("encode %s: %w", mf.GetName(), err)
		}
	}
	return nil
}

// BenchmarkGather gathers and encodes reg as /metrics does (uncompressed
// text), reporting the size of one exposition.
func BenchmarkGather(b *testing.B, reg prometheus.Gatherer) {
	var buf bytes.Buffer
	series := 0
	b.ReportAllocs()
	for b.Loop() {
		buf.Reset()
		mfs, err := reg.Gather()
		if err != nil {
			b.Fatal(err)
		}
		if err := Encode(&buf, mfs); err != nil {
			b.Fatal(err)
		}
		series = 0
		for _, mf := range mfs {
			series += len(mf.GetMetric())
		}
	}
	b.ReportMetric(float64(buf.Len()), "bytes/scrape")
	var gz bytes.Buffer
	w := gzip.NewWriter(&gz)
	_, _ = w.Write(buf.Bytes())
	_ = w.Close()
	b.ReportMetric(float64(gz.Len()), "gzip-bytes/scrape")
	b.ReportMetric(float64(series), "series")
}

// Gather registers cs in a fresh registry and gathers it.
func Gather(t testing.TB, cs ...prometheus.Collector) map[string]*dto.MetricFamily {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(cs...)
	return Families(t, reg)
}

// Families gathers g and returns its families by name.
func Families(t testing.TB, g prometheus.Gatherer) map[string]*dto.MetricFamily {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	out := map[string]*dto.MetricFamily{}
	for _, mf := range mfs {
		out[mf.GetName()] = mf
	}
	return out
}

// Series returns the series of family name whose labels include every
// name=value pair of match.
func Series(t testing.TB, mfs map[string]*dto.MetricFamily, name string, match ...string) *dto.Metric {
	t.Helper()
	for _, m := range mfs[name].GetMetric() {
		ok := true
		for i := 0; i+1 < len(match); i += 2 {
			found := false
			for _, lp := range m.GetLabel() {
				found = found || lp.GetName() == match[i] && lp.GetValue() == match[i+1]
			}
			ok = ok && found
		}
		if ok {
			return m
		}
	}
	t.Fatalf("no series %s%v", name, match)
	return nil
}

// CounterValue is the value of counter name's series matching match in c.
func CounterValue(t testing.TB, c prometheus.Collector, name string, match ...string) float64 {
	t.Helper()
	return Series(t, Gather(t, c), name, match...).GetCounter().GetValue()
}
