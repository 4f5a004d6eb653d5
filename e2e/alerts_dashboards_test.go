//go:build e2e

package e2e

import (
	"strings"
	"testing"

	"github.com/vllm-prober/vllm-prober/dashboards"
)

// corePanels must return data for every query once the prober has run:
// goodput, acceptance, offered vs completed, client and server TTFT
// percentiles, and the burn rates read from the recorded series.
var corePanels = []string{
	"Goodput",
	"Acceptance ratio vs objective",
	"Acceptance (time range)",
	"Offered vs completed",
	"Time to first token: client vs server",
	"Burn rate over the alert windows",
}

// dashboardVars are the values Grafana would substitute: the stack's
// target and probe, and intervals that fit a few minutes of 1s scrapes.
func (s *alertStack) dashboardVars() map[string]string {
	return with(s.pair(), "datasource", "prometheus", "__rate_interval", "30s", "__interval", "5s", "__range", "5m")
}

// checkDashboards runs every panel query of every dashboard against the
// stack's Prometheus: none may fail, and the core panels must have data.
func (s *alertStack) checkDashboards(t *testing.T) {
	qs, err := dashboards.Queries()
	if err != nil {
		t.Fatal(err)
	}
	if len(qs) == 0 {
		t.Fatal("the dashboards have no queries")
	}
	core := map[string]bool{}
	for _, c := range corePanels {
		core[c] = true
	}
	seen := map[string]bool{}
	var empty []string
	vars := s.dashboardVars()
	for _, q := range qs {
		name := q.Dashboard + "/" + q.Panel + "/" + q.RefID
		seen[q.Panel] = true
		t.Run(name, func(t *testing.T) {
			expr := dashboards.Expand(q.Expr, vars)
			if strings.Contains(expr, "$") {
				t.Fatalf("unexpanded Grafana variable in %q", expr)
			}
			v, err := query(s.prom, expr)
			if err != nil {
				t.Fatalf("query fails: %v\n%s", err, expr)
			}
			if len(v) == 0 {
				if core[q.Panel] {
					t.Fatalf("core panel query returns no data:\n%s", expr)
				}
				empty = append(empty, name)
				return
			}
			if q.Panel == "Goodput" && sampleValue(v[0]) <= 0 {
				t.Errorf("goodput is %v, want > 0", v[0].Value)
			}
		})
	}
	for _, c := range corePanels {
		if !seen[c] {
			t.Errorf("core panel %q not found in the dashboards (renamed?)", c)
		}
	}
	if len(empty) == 0 {
		empty = []string{"none"}
	}
	t.Logf("%d queries ran; without data (no such event during the test): %s", len(qs), strings.Join(empty, ", "))
}
