package server

import (
	"bytes"
	"io"
	"os"
	"regexp"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
	"github.com/vllm-prober/vllm-prober/internal/promtext"
)

// familiesCollector exports built families, as ServerScraper.Collect does.
type familiesCollector []*family

func (familiesCollector) Describe(chan<- *prometheus.Desc) {}

func (fs familiesCollector) Collect(ch chan<- prometheus.Metric) {
	for _, f := range fs {
		for _, m := range f.metrics {
			ch <- serverMetric{desc: f.desc, m: m}
		}
	}
}

// FuzzServerFamilies feeds arbitrary expositions through the parser and the
// family builder: whatever a server sends, the re-exported families must
// gather cleanly in a pedantic registry (no collision, duplicate or invalid
// name ever reaches /metrics) and never panic.
func FuzzServerFamilies(f *testing.F) {
	if b, err := os.ReadFile("testdata/vllm-metrics.txt"); err == nil {
		f.Add(b, false)
	}
	f.Add([]byte("# TYPE a histogram\na_bucket{le=\"1\"} 1\na_count 1\n# TYPE a_count gauge\na_count 2\n"), false)
	f.Add([]byte("x{target=\"a\",exported_target=\"b\"} 1\nx{target=\"a\",exported_target=\"b\"} 2\n"), false)
	f.Add([]byte("# TYPE c counter\nc_total 1\n# EOF\n"), true)
	f.Fuzz(func(t *testing.T, data []byte, openMetrics bool) {
		format := expfmt.NewFormat(expfmt.TypeTextPlain)
		if openMetrics {
			format = expfmt.NewFormat(expfmt.TypeOpenMetrics)
		}
		mfs, err := decodeFamilies(bytes.NewReader(data), format)
		if err != nil {
			return
		}
		others := map[string]familyInfo{}
		b := newFamilyBuilder([]string{"target"}, []string{"t"}, regexp.MustCompile("^(?:.*)$"), 50, others)
		for _, mf := range mfs {
			b.add(mf)
		}
		reg := prometheus.NewPedanticRegistry()
		reg.MustRegister(familiesCollector(b.out))
		got, err := reg.Gather()
		if err != nil {
			t.Fatalf("gather: %v", err)
		}
		if err := promtext.Encode(io.Discard, got); err != nil {
			t.Fatalf("encode: %v", err)
		}
	})
}
