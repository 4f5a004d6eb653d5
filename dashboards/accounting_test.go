package dashboards

import (
	"testing"

	"github.com/vllm-prober/vllm-prober/rules"
)

// TestAccountingPanelsMatchRules: the panels that show acceptance,
// goodput, offered and completed requests compute them with the recording
// rules' PromQL (rules.AcceptanceExpr and friends), over the dashboard's
// variables and intervals instead of the job and a fixed window.
func TestAccountingPanelsMatchRules(t *testing.T) {
	const (
		m   = `target=~"$target",probe=~"$probe"`
		obj = `target_probe:vllm_probe_objective:ratio{target=~"$target",probe=~"$probe"}`
	)
	want := map[string]string{
		"Acceptance ratio vs objective/A":       rules.AcceptanceExpr(m, "$__rate_interval"),
		"Acceptance (time range)/A":             rules.AcceptanceExpr(m, "$__range"),
		"Error budget remaining (time range)/A": "1 - (\n1 - (\n" + rules.AcceptanceExpr(m, "$__range") + "\n)\n)\n/ on (target, probe) (1 - " + obj + ")",
		"Error budget burn rate/A":              "(1 - (\n" + rules.AcceptanceExpr(m, "$__rate_interval") + "\n))\n/ on (target, probe) (1 - " + obj + ")",
		"Goodput/A":                             rules.GoodputExpr(m, "$__rate_interval"),
		"Offered vs completed/A":                rules.OfferedExpr(m, "$__rate_interval"),
		"Offered vs completed/B":                rules.CompletedExpr(m, "$__rate_interval"),
		"Replicas: acceptance and TTFT p99/A":   rules.ReplicaAcceptanceExpr(m+`,replica!=""`, "$__range"),
		"Gateway vs replicas acceptance/A":      rules.AcceptanceExpr(m+`,replica=""`, "$__rate_interval"),
		"Gateway vs replicas acceptance/B":      rules.AcceptanceExpr(m+`,replica!=""`, "$__rate_interval"),
	}
	qs, err := Queries()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, q := range qs {
		if q.Dashboard == "overview.json" {
			got[q.Panel+"/"+q.RefID] = q.Expr
		}
	}
	for panel, expr := range want {
		t.Run(panel, func(t *testing.T) {
			if got[panel] != expr {
				t.Errorf("panel query\n%s\nwant the rules' PromQL\n%s", got[panel], expr)
			}
		})
	}
}
