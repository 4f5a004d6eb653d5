package rules

import (
	"slices"
	"testing"

	"github.com/vllm-prober/vllm-prober/probe"
)

// TestAccountingMatchesProbe: the label values the rules select are the
// ones probe's single definition of the accounting uses (order does not
// matter in a regex alternation).
func TestAccountingMatchesProbe(t *testing.T) {
	var abandoned, completed []string
	for _, reason := range probe.Reasons {
		r := probe.Result{Disposition: probe.Cancelled, Reason: reason}
		if r.Abandoned() {
			abandoned = append(abandoned, reason)
		}
	}
	for _, d := range probe.Dispositions {
		r := probe.Result{Disposition: d}
		if d != probe.ServerFailure && r.ServerCompleted() {
			completed = append(completed, string(d))
		}
	}
	cases := []struct {
		name      string
		got, want []string
	}{
		{"abandoned reasons", abandonedReasons, []string{probe.ReasonShutdown, probe.ReasonRemoved}},
		{"abandoned reasons per Result.Abandoned", abandonedReasons, abandoned},
		{"completed failure reasons", completedFailureReasons, probe.CompletedFailureReasons},
		{"completed dispositions per Result.ServerCompleted", completedDispositions, completed},
		{"in-flight cap reason", []string{reasonInFlightCap}, []string{probe.ReasonInFlightCap}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if !slices.Equal(slices.Sorted(slices.Values(tc.got)), slices.Sorted(slices.Values(tc.want))) {
				t.Errorf("rules spell %v, probe defines %v", tc.got, tc.want)
			}
		})
	}
	t.Run("every completed failure reason is a server_failure ServerCompleted accepts", func(t *testing.T) {
		for _, reason := range probe.Reasons {
			r := probe.Result{Disposition: probe.ServerFailure, Reason: reason}
			if r.ServerCompleted() != slices.Contains(completedFailureReasons, reason) {
				t.Errorf("reason %s: ServerCompleted = %v, rules disagree", reason, r.ServerCompleted())
			}
		}
	})
}

// TestAccountingExprs pins the PromQL the dashboards share with the
// recording rules.
func TestAccountingExprs(t *testing.T) {
	const m = `target=~"$target"`
	cases := []struct {
		name, got, want string
	}{
		{"offered", OfferedExpr("", "5m"), `sum by (target, probe) (rate(vllm_probe_requests_offered_total{}[5m]))`},
		{"goodput", GoodputExpr(m, "1m"), `sum by (target, probe) (rate(vllm_probe_requests_total{target=~"$target",disposition="accepted"}[1m]))`},
		{"shed share", ShedExpr(m, "5m"), "sum by (target, probe) (rate(vllm_probe_failures_total{target=~\"$target\",reason=\"in_flight_cap\"}[5m]))\n/\n" +
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
