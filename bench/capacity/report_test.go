package capacity

import (
	"bytes"
	"strings"
	"testing"

	"github.com/vllm-prober/vllm-prober/bench/stats"
	"github.com/vllm-prober/vllm-prober/probe"
)

func TestPrintTable(t *testing.T) {
	s := &Search{Rule: "acceptance >= 0.9900", Rated: 2, Saturated: true, LowestFail: 4, Repeats: []Repeat{
		{Rate: 2, Pass: true, Metrics: stats.Metrics{Acceptance: 1, SendRate: 2, CompletedThroughput: 2, Goodput: 2,
			Latency: map[string]stats.Dist{stats.MetricTTFT: {Percentiles: []stats.Percentile{{P: 50, MS: 10}, {P: 99, MS: 20}}}}}},
		{Rate: 4, Why: []string{"acceptance 0.5000 < 0.9900"}, Metrics: stats.Metrics{Acceptance: 0.5,
			Dispositions: map[probe.Disposition]int{probe.Accepted: 1, probe.ClientTimeout: 1}}},
	}}
	var buf bytes.Buffer
	PrintTable(&buf, s, PassRule{MinAcceptance: 0.99, Percentile: 99})
	PrintVerdict(&buf, s)
	for _, want := range []string{"ttft p99", "10.0ms", "20.0ms", "client_timeout=1", "FAIL: acceptance 0.5000 < 0.9900", "PASS",
		"Rated capacity: 2.00 req/s (lowest failing load 4.00 req/s)", "Pass rule: every repeat has acceptance >= 0.9900"} {
		t.Run(want, func(t *testing.T) {
			if !strings.Contains(buf.String(), want) {
				t.Errorf("table lacks %q:\n%s", want, buf.String())
			}
		})
	}
	b, err := Marshal(s, nil, nil)
	if err != nil || !strings.Contains(string(b), `"rated_capacity": 2`) || !strings.Contains(string(b), `"lowest_fail": 4`) {
		t.Errorf("JSON %s, %v", b, err)
	}
}
