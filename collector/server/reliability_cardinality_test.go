package server

import (
	"fmt"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/vllm-prober/vllm-prober/collector/metricname"
	"github.com/vllm-prober/vllm-prober/config"
)

// manySeries is a /metrics page of one allowed gauge family with n series.
func manySeries(n int) string {
	var b strings.Builder
	b.WriteString("# TYPE vllm:num_requests_running gauge\n")
	for i := range n {
		fmt.Fprintf(&b, "vllm:num_requests_running{engine=\"%d\"} 1\n", i)
	}
	return b.String()
}

// TestServerScraperCapsCardinality: a server exposing 50k series gets at
// most MaxSeriesPerTarget re-exported; the rest are counted as dropped.
func TestServerScraperCapsCardinality(t *testing.T) {
	tests := []struct {
		name string
		max  int
		want int
	}{
		{"configured cap", 1000, 1000},
		{"default cap", 0, DefaultMaxSeriesPerTarget},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := newFakeServer(t, manySeries(50000))
			h := newHarness(t, ScraperOptions{MaxSeriesPerTarget: tc.max})
			h.Apply(&config.Config{Targets: []config.Target{serverTarget("a", srv)}})
			h.wait(t, "a")
			if got := testutil.CollectAndCount(h, "vllm:num_requests_running"); got != tc.want {
				t.Errorf("%d series re-exported, want %d", got, tc.want)
			}
			want := fmt.Sprintf("# HELP %s %s\n# TYPE %s counter\n%s{reason=\"limit\",target=\"a\"} %d\n",
				metricname.ServerSeriesDropped, metricname.ServerSeriesDroppedHelp, metricname.ServerSeriesDropped, metricname.ServerSeriesDropped, 50000-tc.want)
			if err := testutil.CollectAndCompare(h, strings.NewReader(want+droppedZeros("a", "limit")), metricname.ServerSeriesDropped); err != nil {
				t.Error(err)
			}
		})
	}
}

// droppedZeros lists the zero series of every drop reason but skip.
func droppedZeros(target, skip string) string {
	var b strings.Builder
	for _, r := range []string{dropLimit, dropInvalidName, dropInvalidLabel, dropDuplicate, "conflict", "reserved", "unsupported_type"} {
		if r != skip {
			fmt.Fprintf(&b, "%s{reason=%q,target=%q} 0\n", metricname.ServerSeriesDropped, r, target)
		}
	}
	return b.String()
}
