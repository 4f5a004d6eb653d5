package rules_test

import (
	"testing"

	"github.com/vllm-prober/vllm-prober/rules"
)

// TestAccountingExprs pins the PromQL the dashboards share with the
// recording rules.
func TestAccountingExprs(t *testing.T) {
	const m = `target=~"$target"`
	cases := []struct {
		name, got, want string
	}{
		{"offered", rules.OfferedExpr("", "5m"), `sum by (target, probe) (rate(vllm_probe_requests_offered_total{}[5m]))`},
		{"goodput", rules.GoodputExpr(m, "1m"), `sum by (target, probe) (rate(vllm_probe_requests_total{target=~"$target",disposition="accepted"}[1m]))`},
		{"shed share", rules.ShedExpr(m, "5m"), "sum by (target, probe) (rate(vllm_probe_failures_total{target=~\"$target\",reason=\"in_flight_cap\"}[5m]))\n/\n" +
			"sum by (target, probe) (rate(vllm_probe_requests_offered_total{target=~\"$target\"}[5m]))"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.got != tc.want {
				t.Errorf("got\n%s\nwant\n%s", tc.got, tc.want)
			}
		})
	}
}
