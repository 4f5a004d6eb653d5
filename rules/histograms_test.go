package rules

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vllm-prober/vllm-prober/config"
)

// leanConfig has a probe with every histogram (full), one with TTFT and
// E2EL native-only (lean) and one with E2EL only, classic (e2el-only);
// target b runs only e2el-only.
func leanConfig() *config.Config {
	off := false
	slo := config.SLO{TTFT: sec(time.Second), TPOT: sec(100 * time.Millisecond)}
	lean := testProbe("lean", 1, 0.99, slo)
	lean.Histograms, lean.ClassicBuckets = []string{config.HistogramTTFT, config.HistogramE2EL}, &off
	e2el := testProbe("e2el-only", 1, 0.99, slo)
	e2el.Histograms = []string{config.HistogramE2EL}
	return &config.Config{
		Targets: []config.Target{{Name: "a"}, {Name: "b", Probes: []string{"e2el-only"}}},
		Probes:  []config.Probe{testProbe("full", 1, 0.99, slo), lean, e2el},
	}
}

// TestGenerateHistogramSelection: an alert that needs a histogram a probe
// left out is dropped (or does not cover the probe) with a warning naming
// the probe and the alert, and native-only histograms are read without
// _bucket and le.
func TestGenerateHistogramSelection(t *testing.T) {
	rf, warnings, err := Generate(leanConfig(), Options{})
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
	for _, r := range alerts(rf, AlertLatencyHigh) {
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
	if lag := alerts(rf, AlertScheduleLag); len(lag) != 1 || lag[0].Expr != wantLag {
		t.Errorf("schedule lag alerts %v, want one with expr %s", lag, wantLag)
	}
	ttft := records(rf)[RecordClientTTFT+"10m"].Expr
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
	cfg := leanConfig()
	cfg.Probes = cfg.Probes[1:]
	cfg.Targets[0].Probes = []string{"lean", "e2el-only"}
	rf, _, err := Generate(cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(alerts(rf, AlertScheduleLag)); n != 0 {
		t.Errorf("%d schedule lag alerts, want none", n)
	}
	lean := cfg.Probes[0]
	lean.Histograms = append(lean.Histograms, config.HistogramScheduleLag)
	rf, _, err = Generate(oneProbe(lean), Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := `histogram_quantile(0.99, sum by (target, probe) (rate(vllm_probe_schedule_lag_seconds{job="vllm-prober"}[10m])))` + "\n> 1"
	if lag := alerts(rf, AlertScheduleLag); len(lag) != 1 || lag[0].Expr != want {
		t.Errorf("native-only schedule lag alert %v, want expr %s", lag, want)
	}
	tf, err := Tests(oneProbe(lean), Options{})
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

// reasoningConfig has a reasoning probe with TTFT and TTFA SLOs whose
// histograms select both.
func reasoningConfig() *config.Config {
	p := testProbe("think", 1, 0.99, config.SLO{TTFT: sec(time.Second), TTFA: sec(8 * time.Second)})
	p.Histograms = []string{config.HistogramTTFT, config.HistogramTTFA, config.HistogramE2EL}
	return oneProbe(p)
}

// TestGenerateTTFASelection: slo.ttfa gets a p99 alert on the TTFA
// histogram only when the probe's histograms select ttfa; otherwise the
// alert is dropped with a warning, as for the other SLOs.
func TestGenerateTTFASelection(t *testing.T) {
	slo := config.SLO{TTFA: sec(4 * time.Second)}
	selected := testProbe("think", 1, 0.99, slo)
	selected.Histograms = []string{config.HistogramTTFA}
	unselected := testProbe("think", 1, 0.99, slo)
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
			rf, warnings, err := Generate(oneProbe(tc.probe), Options{})
			if err != nil {
				t.Fatal(err)
			}
			var exprs []string
			for _, r := range alerts(rf, AlertLatencyHigh) {
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

// TestTestsLatencyCoversTTFA: the generated latency scenario breaks every
// SLO of its pair, TTFA included, and expects each p99 alert.
func TestTestsLatencyCoversTTFA(t *testing.T) {
	tf, err := Tests(reasoningConfig(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range tf.Tests {
		if g.Name != "latency: llama/think p99 ttft, ttfa above its SLO" {
			continue
		}
		var got []string
		for _, a := range g.AlertRuleTests[0].ExpAlerts {
			got = append(got, a.ExpLabels["slo"]+" "+a.ExpAnnotations["summary"])
		}
		want := []string{"ttft llama/think p99 TTFT is 1.99s, above its 1s SLO", "ttfa llama/think p99 TTFA is 15.92s, above its 8s SLO"}
		if !slices.Equal(got, want) {
			t.Errorf("expected alerts %q, want %q", got, want)
		}
		return
	}
	t.Fatal("no latency scenario for ttft and ttfa")
}
