package dashboards

import (
	"strings"
	"testing"

	"github.com/vllm-prober/vllm-prober/collector/metricname"
)

// TestPanelsFollowHistogramSelection: a panel that reads a probe
// histogram says which `histograms:` entry it needs (so a lean probe's
// empty panel is explained, not silent), and every quantile it takes from
// classic buckets has the native-histogram form beside it, so probes with
// classic_buckets: false show too. Heatmaps read classic buckets and say so.
func TestPanelsFollowHistogramSelection(t *testing.T) {
	qs, err := Queries()
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, q := range qs {
		for _, fam := range MetricNames(q.Expr) {
			name, ok := metricname.SelectedBy[strings.TrimSuffix(fam, "_bucket")]
			if !ok {
				continue
			}
			checked++
			where := q.Dashboard + "/" + q.Panel + "/" + q.RefID
			if !strings.Contains(q.PanelDescription, "`"+name+"`") || !strings.Contains(q.PanelDescription, "`histograms:`") {
				t.Errorf("%s reads %s but its description does not say it needs `%s` in `histograms:`: %q", where, fam, name, q.PanelDescription)
			}
			base := strings.TrimSuffix(fam, "_bucket")
			classic, native := strings.Count(q.Expr, "(rate("+base+"_bucket{"), strings.Count(q.Expr, "(rate("+base+"{")
			switch {
			case q.PanelType == "heatmap":
				if !strings.Contains(q.PanelDescription, "classic_buckets: false") {
					t.Errorf("%s: heatmap of classic buckets does not say it is empty for native-only probes", where)
				}
			case classic != native:
				t.Errorf("%s: %d quantiles over %s_bucket but %d over native %s:\n%s", where, classic, base, native, base, q.Expr)
			}
		}
	}
	if checked < 20 {
		t.Errorf("only %d probe histogram reads checked", checked)
	}
}

// TestReasoningAndFleetPanels: the latency dashboard shows TTFA beside
// TTFT and the reasoning token rate; the overview has a per-replica table
// of acceptance and TTFT p99 grouped by target and replica, and gateway
// and replica acceptance on one panel.
func TestReasoningAndFleetPanels(t *testing.T) {
	qs, err := Queries()
	if err != nil {
		t.Fatal(err)
	}
	want := []struct{ dashboard, panel, contains string }{
		{"latency.json", "Time to first answer token vs first token", metricname.TTFA + "_bucket{"},
		{"latency.json", "Time to first answer token vs first token", metricname.TTFT + "_bucket{"},
		{"latency.json", "Reasoning tokens", "rate(" + metricname.ReasoningTokens + "{"},
		{"overview.json", "Replicas: acceptance and TTFT p99", "sum by (target, probe, replica)"},
		{"overview.json", "Replicas: acceptance and TTFT p99", "sum by (target, probe, replica, le) (rate(" + metricname.TTFT + "_bucket{"},
		{"overview.json", "Gateway vs replicas acceptance", `replica=""`},
		{"overview.json", "Gateway vs replicas acceptance", `replica!=""`},
	}
	for _, w := range want {
		found := false
		for _, q := range qs {
			found = found || q.Dashboard == w.dashboard && q.Panel == w.panel && strings.Contains(q.Expr, w.contains)
		}
		if !found {
			t.Errorf("%s: no query of panel %q contains %q", w.dashboard, w.panel, w.contains)
		}
	}
}
