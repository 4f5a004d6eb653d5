package plan

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
		{"abandoned reasons", AbandonedReasons, []string{probe.ReasonShutdown, probe.ReasonRemoved}},
		{"abandoned reasons per Result.Abandoned", AbandonedReasons, abandoned},
		{"completed failure reasons", CompletedFailureReasons, probe.CompletedFailureReasons},
		{"completed dispositions per Result.ServerCompleted", CompletedDispositions, completed},
		{"in-flight cap reason", []string{ReasonInFlightCap}, []string{probe.ReasonInFlightCap}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if !slices.Equal(slices.Sorted(slices.Values(tc.got)), slices.Sorted(slices.Values(tc.want))) {
				t.Errorf("the plan spells %v, probe defines %v", tc.got, tc.want)
			}
		})
	}
	t.Run("every completed failure reason is a server_failure ServerCompleted accepts", func(t *testing.T) {
		for _, reason := range probe.Reasons {
			r := probe.Result{Disposition: probe.ServerFailure, Reason: reason}
			if r.ServerCompleted() != slices.Contains(CompletedFailureReasons, reason) {
				t.Errorf("reason %s: ServerCompleted = %v, rules disagree", reason, r.ServerCompleted())
			}
		}
	})
}
