package rules_test

import (
	"strings"
	"testing"

	"github.com/vllm-prober/vllm-prober/config"
	"github.com/vllm-prober/vllm-prober/rules"
	"github.com/vllm-prober/vllm-prober/rules/internal/rulefile"
	"github.com/vllm-prober/vllm-prober/rules/internal/rulestest"
)

// burnValue is how a burn alert's annotations render its value.
const burnValue = `{{ $value | printf "%.1f" }}`

func windowsOf(rs []rules.Rule) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.Labels["long_window"]+"/"+r.Labels["short_window"])
	}
	return out
}

func TestGenerateBurnWindows(t *testing.T) {
	cases := []struct {
		name      string
		rate, obj float64
		opts      rules.Options
		page      []string
		ticket    []string
		warnings  int
		lowTraffy bool
	}{
		{name: "standard windows at 0.2/s", rate: 0.2, obj: 0.99, page: []string{"10m/5m", "30m/5m", "6h/10m"}, ticket: []string{"1d/10m"}},
		{name: "0.05/s widens the 5m short windows to hold 30 requests", rate: 0.05, obj: 0.99,
			page: []string{"20m/10m", "1h/10m", "6h/10m"}, ticket: []string{"1d/10m"}, warnings: 2, lowTraffy: true},
		{name: "loose objective drops the 12x page", rate: 0.2, obj: 0.9,
			page: []string{"30m/5m", "6h/10m"}, ticket: []string{"1d/10m"}, warnings: 1},
		{name: "strict objective: one failure would page, windows widen", rate: 0.2, obj: 0.99999,
			page: []string{"23h10m/11h35m", "1d11h/5h50m", "2d/1h20m"}, ticket: nil, warnings: 4, lowTraffy: true},
		{name: "random failures at half the budget would fire too often: windows widen, the ticket is dropped", rate: 0.05, obj: 0.999,
			page: []string{"1h30m/45m", "2h30m/25m", "6h/10m"}, ticket: nil, warnings: 3, lowTraffy: true},
		{name: "very low rate drops the pairs it cannot widen", rate: 0.0005, obj: 0.99,
			page: []string{"1d9h20m/16h40m"}, ticket: nil, warnings: 4, lowTraffy: true},
		{name: "min requests option", rate: 0.2, obj: 0.99, opts: rules.Options{MinRequests: 120},
			page: []string{"20m/10m", "1h/10m", "6h/10m"}, ticket: []string{"1d/10m"}, warnings: 2, lowTraffy: true},
		{name: "window scale 1/60", rate: 10, obj: 0.99, opts: rules.Options{WindowScale: 1.0 / 60},
			page: []string{"10s/5s", "30s/5s", "6m/10s"}, ticket: []string{"24m/10s"}},
		{name: "window scale 1/60 at 2/s: the noise guard widens the 12x pair", rate: 2, obj: 0.99, opts: rules.Options{WindowScale: 1.0 / 60, MinRequests: 5},
			page: []string{"20s/10s", "30s/5s", "6m/10s"}, ticket: []string{"24m/10s"}, warnings: 1, lowTraffy: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rf, warnings, err := rules.Generate(rulestest.OneProbe(rulestest.Probe("chat", tc.rate, tc.obj, config.SLO{})), tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			if got := windowsOf(rulestest.Alerts(rf, rules.AlertFastBurn)); strings.Join(got, ",") != strings.Join(tc.page, ",") {
				t.Errorf("page windows = %v, want %v", got, tc.page)
			}
			if got := windowsOf(rulestest.Alerts(rf, rules.AlertSlowBurn)); strings.Join(got, ",") != strings.Join(tc.ticket, ",") {
				t.Errorf("ticket windows = %v, want %v", got, tc.ticket)
			}
			if len(warnings) != tc.warnings {
				t.Errorf("warnings = %d %v, want %d", len(warnings), warnings, tc.warnings)
			}
			annotated := false
			for _, r := range append(rulestest.Alerts(rf, rules.AlertFastBurn), rulestest.Alerts(rf, rules.AlertSlowBurn)...) {
				annotated = annotated || r.Annotations["low_traffic"] != ""
				for _, w := range []string{r.Labels["long_window"], r.Labels["short_window"]} {
					if _, ok := rulestest.Records(rf)[rules.RecordAcceptance+w]; !ok {
						t.Errorf("alert uses window %s that is not recorded", w)
					}
				}
			}
			if annotated != tc.lowTraffy {
				t.Errorf("low_traffic annotation present = %v, want %v", annotated, tc.lowTraffy)
			}
		})
	}
}

func TestGenerateBurnThresholds(t *testing.T) {
	rf, _, err := rules.Generate(rulestest.OneProbe(rulestest.Probe("chat", 0.2, 0.995, config.SLO{})), rules.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name     string
		alert    string
		idx      int
		severity string
		expr     string
		forD     string
	}{
		{"12x page", rules.AlertFastBurn, 0, rules.SeverityPage,
			"(1 - target_probe:vllm_probe_acceptance:ratio_rate10m{target=\"llama\",probe=\"chat\"}) / 0.005 > 12\nand\n(1 - target_probe:vllm_probe_acceptance:ratio_rate5m{target=\"llama\",probe=\"chat\"}) / 0.005 > 12\nand\ntarget_probe:vllm_probe_requests_offered:rate10m{target=\"llama\",probe=\"chat\"} * 600 >= 1.5 * target_probe:vllm_probe_requests_offered:rate5m{target=\"llama\",probe=\"chat\"} * 300", ""},
		{"8x page", rules.AlertFastBurn, 1, rules.SeverityPage,
			"(1 - target_probe:vllm_probe_acceptance:ratio_rate30m{target=\"llama\",probe=\"chat\"}) / 0.005 > 8\nand\n(1 - target_probe:vllm_probe_acceptance:ratio_rate5m{target=\"llama\",probe=\"chat\"}) / 0.005 > 8\nand\ntarget_probe:vllm_probe_requests_offered:rate30m{target=\"llama\",probe=\"chat\"} * 1800 >= 1.5 * target_probe:vllm_probe_requests_offered:rate5m{target=\"llama\",probe=\"chat\"} * 300", ""},
		{"6x page", rules.AlertFastBurn, 2, rules.SeverityPage,
			"(1 - target_probe:vllm_probe_acceptance:ratio_rate6h{target=\"llama\",probe=\"chat\"}) / 0.005 > 6\nand\n(1 - target_probe:vllm_probe_acceptance:ratio_rate10m{target=\"llama\",probe=\"chat\"}) / 0.005 > 6\nand\ntarget_probe:vllm_probe_requests_offered:rate6h{target=\"llama\",probe=\"chat\"} * 21600 >= 1.5 * target_probe:vllm_probe_requests_offered:rate10m{target=\"llama\",probe=\"chat\"} * 600", ""},
		{"1x ticket", rules.AlertSlowBurn, 0, rules.SeverityTicket,
			"(1 - target_probe:vllm_probe_acceptance:ratio_rate1d{target=\"llama\",probe=\"chat\"}) / 0.005 > 1\nand\n(1 - target_probe:vllm_probe_acceptance:ratio_rate10m{target=\"llama\",probe=\"chat\"}) / 0.005 > 1\nand\ntarget_probe:vllm_probe_requests_offered:rate1d{target=\"llama\",probe=\"chat\"} * 86400 >= 1.5 * target_probe:vllm_probe_requests_offered:rate10m{target=\"llama\",probe=\"chat\"} * 600", "15m"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := rulestest.Alerts(rf, tc.alert)[tc.idx]
			if r.Expr != tc.expr {
				t.Errorf("expr =\n%s\nwant\n%s", r.Expr, tc.expr)
			}
			if r.Labels["severity"] != tc.severity || r.Labels["target"] != "llama" || r.Labels["probe"] != "chat" {
				t.Errorf("labels = %v", r.Labels)
			}
			if r.For != tc.forD {
				t.Errorf("for = %s, want %s", r.For, tc.forD)
			}
			// $value is the first operand of the `and`: the long window's burn.
			if !strings.Contains(r.Annotations["description"], "99.5%") || !strings.Contains(r.Annotations["summary"], burnValue+"x too fast over "+r.Labels["long_window"]) ||
				!strings.Contains(r.Annotations["description"], "Over the last "+r.Labels["long_window"]+" the budget burned "+burnValue) {
				t.Errorf("annotations do not say the objective and burn rate: %v", r.Annotations)
			}
		})
	}
}

func TestGenerateRecording(t *testing.T) {
	rf, _, err := rules.Generate(rulestest.OneProbe(rulestest.Probe("chat", 0.2, 0.99, config.SLO{})), rules.Options{Job: "probers"})
	if err != nil {
		t.Fatal(err)
	}
	recs := rulestest.Records(rf)
	cases := []struct {
		name, record, expr string
	}{
		{"completed: server-completed dispositions and failure reasons", rules.RecordCompleted + "5m", "sum by (target, probe) (rate(vllm_probe_requests_total{job=\"probers\",disposition=~\"accepted|latency_failure|quality_failure\"}[5m]))\n+\n" +
			"sum by (target, probe) (rate(vllm_probe_failures_total{job=\"probers\",reason=~\"http_4xx|http_429|http_5xx|redirect|stream_error|protocol|no_done\"}[5m]))"},
		{"goodput", rules.RecordGoodput + "3d", `sum by (target, probe) (rate(vllm_probe_requests_total{job="probers",disposition="accepted"}[3d]))`},
		{"offered", rules.RecordOffered + "2h", `sum by (target, probe) (rate(vllm_probe_requests_offered_total{job="probers"}[2h]))`},
		{"acceptance: shed requests stay in the denominator, abandoned ones leave it", rules.RecordAcceptance + "1d", "sum by (target, probe) (rate(vllm_probe_requests_total{job=\"probers\",disposition=\"accepted\"}[1d]))\n/\n(\n" +
			"  sum by (target, probe) (rate(vllm_probe_requests_total{job=\"probers\"}[1d]))\n  -\n" +
			"  sum by (target, probe) (rate(vllm_probe_failures_total{job=\"probers\",reason=~\"shutdown|removed\"}[1d]))\n)"},
		{"objective", rules.RecordObjective, "vector(0.99)"},
		{"server ttft", rules.RecordServerTTFT + "10m", `histogram_quantile(0.5, sum by (target, le) (rate(vllm:time_to_first_token_seconds_bucket{job="probers",target!=""}[10m])))`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := recs[tc.record].Expr; got != tc.expr {
				t.Errorf("%s expr =\n%s\nwant\n%s", tc.record, got, tc.expr)
			}
		})
	}
	t.Run("every standard window", func(t *testing.T) {
		for _, w := range []string{"5m", "10m", "30m", "1h", "2h", "6h", "1d", "3d"} {
			for _, prefix := range []string{rules.RecordOffered, rules.RecordCompleted, rules.RecordGoodput, rules.RecordAcceptance} {
				if _, ok := recs[prefix+w]; !ok {
					t.Errorf("missing %s%s", prefix, w)
				}
			}
		}
	})
	t.Run("absent uses the job option", func(t *testing.T) {
		if got := rulestest.Alerts(rf, rules.AlertProberAbsent)[0].Expr; got != `absent(up{job="probers"})` {
			t.Errorf("absent expr = %s", got)
		}
	})
}

// TestGenerateKeepsPlan: the rule file Generate returns carries the plan
// it was rendered from, the one rules/promtest writes its tests from
// instead of building a second; a file built by hand carries none.
func TestGenerateKeepsPlan(t *testing.T) {
	cfg := rulestest.FleetConfig()
	rf, warnings, err := rules.Generate(cfg, rules.Options{})
	if err != nil {
		t.Fatal(err)
	}
	p := rulefile.Plan(rf)
	if p == nil {
		t.Fatal("Generate's rule file carries no plan")
	}
	if len(p.Gateways) != 1 || p.Gateways[0] != "fleet" || len(p.Warnings) != len(warnings) {
		t.Errorf("plan has gateways %v and %d warnings, want [fleet] and %d", p.Gateways, len(p.Warnings), len(warnings))
	}
	if p := rulefile.Plan(&rules.RuleFile{}); p != nil {
		t.Errorf("a rule file built by hand carries plan %v", p)
	}
}
