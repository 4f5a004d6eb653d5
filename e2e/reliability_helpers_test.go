//go:build e2e

package e2e

import (
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"

	"github.com/vllm-prober/vllm-prober/internal/promtext"
)

// relValue sums the values of the series of family name whose labels
// include every pair of want (nil = every series).
func relValue(fams map[string]*dto.MetricFamily, name string, want map[string]string) float64 {
	f := fams[name]
	if f == nil {
		return 0
	}
	total := 0.0
	for _, m := range f.GetMetric() {
		if !relMatch(m, want) {
			continue
		}
		switch {
		case m.Counter != nil:
			total += m.GetCounter().GetValue()
		case m.Gauge != nil:
			total += m.GetGauge().GetValue()
		case m.Histogram != nil:
			total += float64(m.GetHistogram().GetSampleCount())
		case m.Untyped != nil:
			total += m.GetUntyped().GetValue()
		}
	}
	return total
}

func relMatch(m *dto.Metric, want map[string]string) bool {
	got := promtext.Labels(m)
	for k, v := range want {
		if l, ok := got[k]; !ok || l != v {
			return false
		}
	}
	return true
}

// relNoPanic fails when logs hold a Go panic or a data race report.
func relNoPanic(t testing.TB, logs string) {
	t.Helper()
	for _, bad := range []string{"panic:", "goroutine ", "DATA RACE", "request panicked"} {
		if strings.Contains(logs, bad) {
			t.Errorf("daemon logs hold %q:\n%s", bad, relTail(logs, 4000))
		}
	}
}

func relTail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[len(s)-n:]
}
