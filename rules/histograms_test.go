package rules_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vllm-prober/vllm-prober/config"
	"github.com/vllm-prober/vllm-prober/rules"
	"github.com/vllm-prober/vllm-prober/rules/internal/rulestest"
	"github.com/vllm-prober/vllm-prober/rules/promtest"
)

// TestGenerateHistogramSelection: an alert that needs a histogram a probe
// left out is dropped (or does not cover the probe) with a warning naming
// the probe and the alert, and native-only histograms are read without
// _bucket and le.
func TestGenerateHistogramSelection(t *testing.T) {
	rf, warnings, err := rules.Generate(rulestest.LeanConfig(), rules.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, w := range warnings {
		got = append(got, w.String())
	}
	want := []string{
		`target "a" probe "lean" p99 tpot: dropped: the probe's histograms leave out tpot (vllm_probe_time_per_output_token_seconds), so there is no p99 to judge; add tpot to them to get the alert`,
		`target "a" probe "e2el-only" p99 ttft: dropped: the probe's histograms leave out ttft (vllm_probe_time_to_first_token_seconds), so there is no p99 to judge; add ttft to them to get the alert`,
		`target "a" probe "e2el-only" p99 tpot: dropped: the probe's histograms leave out tpot (vllm_probe_time_per_output_token_seconds), so there is no p99 to judge; add tpot to them to get the alert`,
		`target "b" probe "e2el-only" p99 ttft: dropped: the probe's histograms leave out ttft (vllm_probe_time_to_first_token_seconds), so there is no p99 to judge; add ttft to them to get the alert`,
		`target "b" probe "e2el-only" p99 tpot: dropped: the probe's histograms leave out tpot (vllm_probe_time_per_output_token_seconds), so there is no p99 to judge; add tpot to them to get the alert`,
		`target "a" probe "lean" schedule lag: not judged for this probe: its histograms leave out schedule_lag (vllm_probe_schedule_lag_seconds); add schedule_lag to them to get the alert`,
		`target "a" probe "e2el-only" schedule lag: not judged for this probe: its histograms leave out schedule_lag (vllm_probe_schedule_lag_seconds); add schedule_lag to them to get the alert`,
		`target "b" probe "e2el-only" schedule lag: not judged for this probe: its histograms leave out schedule_lag (vllm_probe_schedule_lag_seconds); add schedule_lag to them to get the alert`,
		`target "b" client TTFT above server: not judged for this target: none of its probes' histograms includes ttft (vllm_probe_time_to_first_token_seconds)`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("warnings:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	var latency []string
	for _, r := range rulestest.Alerts(rf, rules.AlertLatencyHigh) {
		latency = append(latency, r.Labels["target"]+"/"+r.Labels["probe"]+"/"+r.Labels["slo"])
		if r.Labels["probe"] == "lean" {
			want := `histogram_quantile(0.99, sum by (target, probe) (rate(vllm_probe_time_to_first_token_seconds{job="vllm-prober",target="a",probe="lean"}[10m])))` + "\n> 1"
			if r.Expr != want {
				t.Errorf("native-only latency alert:\n%s\nwant:\n%s", r.Expr, want)
			}
		}
	}
	if want := []string{"a/full/ttft", "a/full/tpot", "a/lean/ttft"}; !slices.Equal(latency, want) {
		t.Errorf("latency alerts %v, want %v", latency, want)
	}

	// Only full exports schedule lag, with classic buckets: the classic
	// form alone.
	wantLag := `histogram_quantile(0.99, sum by (target, probe, le) (rate(vllm_probe_schedule_lag_seconds_bucket{job="vllm-prober"}[10m])))` + "\n> 1"
	if lag := rulestest.Alerts(rf, rules.AlertScheduleLag); len(lag) != 1 || lag[0].Expr != wantLag {
		t.Errorf("schedule lag alerts %v, want one with expr %s", lag, wantLag)
	}
	ttft := rulestest.Records(rf)[rules.RecordClientTTFT+"10m"].Expr
	wantTTFT := "(\n" +
		`histogram_quantile(0.5, sum by (target, le) (rate(vllm_probe_time_to_first_token_seconds_bucket{job="vllm-prober"}[10m])))` + "\nor\n" +
		`histogram_quantile(0.5, sum by (target) (rate(vllm_probe_time_to_first_token_seconds{job="vllm-prober"}[10m])))` + "\n)"
	if ttft != wantTTFT {
		t.Errorf("client TTFT record (full classic and lean native):\n%s\nwant:\n%s", ttft, wantTTFT)
	}
}

// TestGenerateNoScheduleLag: with no pair exporting schedule lag the alert
// is left out (it would read nothing) and so is its promtool scenario.
func TestGenerateNoScheduleLag(t *testing.T) {
	cfg := rulestest.LeanConfig()
	cfg.Probes = cfg.Probes[1:]
	cfg.Targets[0].Probes = []string{"lean", "e2el-only"}
	rf, _, err := rules.Generate(cfg, rules.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(rulestest.Alerts(rf, rules.AlertScheduleLag)); n != 0 {
		t.Errorf("%d schedule lag alerts, want none", n)
	}
	lean := cfg.Probes[0]
	lean.Histograms = append(lean.Histograms, config.HistogramScheduleLag)
	rf, _, err = rules.Generate(rulestest.OneProbe(lean), rules.Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := `histogram_quantile(0.99, sum by (target, probe) (rate(vllm_probe_schedule_lag_seconds{job="vllm-prober"}[10m])))` + "\n> 1"
	if lag := rulestest.Alerts(rf, rules.AlertScheduleLag); len(lag) != 1 || lag[0].Expr != want {
		t.Errorf("native-only schedule lag alert %v, want expr %s", lag, want)
	}
	tf, err := promtest.Generate(rulestest.OneProbe(lean), rules.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range tf.Tests {
		for _, s := range g.InputSeries {
			if strings.Contains(s.Series, "_bucket") && !strings.HasPrefix(s.Series, "vllm:") {
				t.Errorf("group %q feeds %s, a histogram the native-only probe has no buckets for", g.Name, s.Series)
			}
		}
	}
}

// TestGenerateTTFASelection: slo.ttfa gets a p99 alert on the TTFA
// histogram only when the probe's histograms select ttfa; otherwise the
// alert is dropped with a warning, as for the other SLOs.
func TestGenerateTTFASelection(t *testing.T) {
	slo := config.SLO{TTFA: rulestest.Sec(4 * time.Second)}
	selected := rulestest.Probe("think", 1, 0.99, slo)
	selected.Histograms = []string{config.HistogramTTFA}
	unselected := rulestest.Probe("think", 1, 0.99, slo)
	unselected.Histograms = []string{config.HistogramTTFT}
	cases := []struct {
		name    string
		probe   config.Probe
		expr    string
		warning string
	}{
		{"selected", selected, `histogram_quantile(0.99, sum by (target, probe, le) (rate(vllm_probe_time_to_first_answer_token_seconds_bucket{job="vllm-prober",target="llama",probe="think"}[10m])))` + "\n> 4", ""},
		{"left out", unselected, "", `target "llama" probe "think" p99 ttfa: dropped: the probe's histograms leave out ttfa (vllm_probe_time_to_first_answer_token_seconds), so there is no p99 to judge; add ttfa to them to get the alert`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rf, warnings, err := rules.Generate(rulestest.OneProbe(tc.probe), rules.Options{})
			if err != nil {
				t.Fatal(err)
			}
			var exprs []string
			for _, r := range rulestest.Alerts(rf, rules.AlertLatencyHigh) {
				if r.Labels["slo"] != "ttfa" {
					t.Errorf("latency alert for slo %q, want only ttfa", r.Labels["slo"])
				}
				exprs = append(exprs, r.Expr)
			}
			if tc.expr == "" && len(exprs) != 0 || tc.expr != "" && (len(exprs) != 1 || exprs[0] != tc.expr) {
				t.Errorf("latency alerts:\n%s\nwant:\n%s", strings.Join(exprs, "\n"), tc.expr)
			}
			var got []string
			for _, w := range warnings {
				if strings.HasPrefix(w.Alert, "p99") {
					got = append(got, w.String())
				}
			}
			if tc.warning == "" && len(got) != 0 || tc.warning != "" && (len(got) != 1 || got[0] != tc.warning) {
				t.Errorf("warnings %q, want %q", got, tc.warning)
			}
		})
	}
}
