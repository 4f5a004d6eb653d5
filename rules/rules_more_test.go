package rules_test

import (
	"bytes"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/vllm-prober/vllm-prober/config"
	"github.com/vllm-prober/vllm-prober/rules"
	"github.com/vllm-prober/vllm-prober/rules/internal/plan"
	"github.com/vllm-prober/vllm-prober/rules/internal/rulestest"
	"github.com/vllm-prober/vllm-prober/rules/promtest"
)

func TestGenerateLatency(t *testing.T) {
	slo := config.SLO{TTFT: rulestest.Sec(time.Second), TPOT: rulestest.Sec(100 * time.Millisecond), E2EL: rulestest.Sec(20 * time.Second)}
	cases := []struct {
		name    string
		rate    float64
		slo     config.SLO
		want    []string // slo=window>threshold
		warning bool
	}{
		{"every SLO at 0.2/s", 0.2, slo, []string{"ttft=10m>1", "tpot=10m>0.1", "e2el=10m>20"}, false},
		{"only the configured SLO", 0.2, config.SLO{TPOT: rulestest.Sec(50 * time.Millisecond)}, []string{"tpot=10m>0.05"}, false},
		{"no SLO, no alert", 0.2, config.SLO{}, nil, false},
		{"ttfa beside ttft", 0.2, config.SLO{TTFT: rulestest.Sec(time.Second), TTFA: rulestest.Sec(5 * time.Second)}, []string{"ttft=10m>1", "ttfa=10m>5"}, false},
		{"0.02/s widens to hold 100 requests", 0.02, config.SLO{TTFT: rulestest.Sec(time.Second)}, []string{"ttft=1h25m>1"}, true},
		{"0.001/s drops the alert", 0.001, config.SLO{TTFT: rulestest.Sec(time.Second)}, nil, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rf, warnings, err := rules.Generate(rulestest.OneProbe(rulestest.Probe("chat", tc.rate, 0.9, tc.slo)), rules.Options{})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, r := range rulestest.Alerts(rf, rules.AlertLatencyHigh) {
				w := r.Expr[strings.Index(r.Expr, "[")+1 : strings.Index(r.Expr, "]")]
				thr := r.Expr[strings.LastIndex(r.Expr, "> ")+2:]
				got = append(got, r.Labels["slo"]+"="+w+">"+thr)
				if !strings.Contains(r.Expr, plan.SLOMetric[r.Labels["slo"]]+"_bucket") || r.Labels["target"] != "llama" {
					t.Errorf("alert %v does not read its histogram: %s", r.Labels, r.Expr)
				}
			}
			if strings.Join(got, ",") != strings.Join(tc.want, ",") {
				t.Errorf("latency alerts = %v, want %v", got, tc.want)
			}
			hasLatencyWarning := false
			for _, w := range warnings {
				hasLatencyWarning = hasLatencyWarning || strings.HasPrefix(w.Alert, "p99")
			}
			if hasLatencyWarning != tc.warning {
				t.Errorf("latency warning = %v, want %v (%v)", hasLatencyWarning, tc.warning, warnings)
			}
		})
	}
}

func TestGenerateHealth(t *testing.T) {
	cases := []struct {
		name, alert, contains, forD string
	}{
		{"not completing per pair", rules.AlertNotCompleting, `unless`, "5m"},
		{"scrape failing", rules.AlertScrapeFailing, `max by (target) (vllm_probe_server_scrape_success{job="vllm-prober"}) == 0`, "5m"},
		{"schedule lag", rules.AlertScheduleLag, `vllm_probe_schedule_lag_seconds_bucket{job="vllm-prober"}[10m]))) > 1`, "5m"},
		{"client ttft above server", rules.AlertClientTTFTAboveServer, `(target:vllm_probe_time_to_first_token_seconds:p50_rate10m - target:vllm_time_to_first_token_seconds:p50_rate10m) > 0.5`, "10m"},
		{"target down: per target, a minimum-request guard instead of a for:", rules.AlertTargetDown,
			`>= 0.9 and sum by (target) (increase(vllm_probe_requests_total{job="vllm-prober",target="llama",disposition!="cancelled"}[5m])) >= 5`, ""},
		{"prober down", rules.AlertProberDown, `up{job="vllm-prober"} == 0`, "5m"},
		{"in-flight cap: a sustained share of shed requests, not one", rules.AlertInFlightCap,
			`{job="vllm-prober",target="llama",probe="chat",reason="in_flight_cap"}[5m])) / sum by (target, probe) (rate(vllm_probe_requests_offered_total{job="vllm-prober",target="llama",probe="chat"}[5m])) > 0.01`, "15m"},
	}
	rf, _, err := rules.Generate(rulestest.OneProbe(rulestest.Probe("chat", 0.2, 0.99, config.SLO{})), rules.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rs := rulestest.Alerts(rf, tc.alert)
			if len(rs) != 1 {
				t.Fatalf("%d %s rules, want 1", len(rs), tc.alert)
			}
			if !strings.Contains(strings.ReplaceAll(rs[0].Expr, "\n", " "), tc.contains) {
				t.Errorf("expr %q does not contain %q", rs[0].Expr, tc.contains)
			}
			if rs[0].For != tc.forD || rs[0].Annotations["runbook_url"] == "" || rs[0].Labels["severity"] == "" {
				t.Errorf("for = %s, labels %v, annotations %v", rs[0].For, rs[0].Labels, rs[0].Annotations)
			}
		})
	}
}

// TestInFlightCapForOutlastsWindow: the alert's window holds at least 10
// expected requests, and one shed request leaves it after one window, so
// the for: is at least two windows whatever --ticket-for says.
func TestInFlightCapForOutlastsWindow(t *testing.T) {
	cases := []struct {
		name      string
		rate      float64
		o         rules.Options
		forD, win string
	}{
		{"default ticket for", 1, rules.Options{}, "15m", "[5m]"},
		{"short ticket for", 1, rules.Options{TicketFor: time.Minute}, "10m", "[5m]"},
		{"low rate widens the window", 0.01, rules.Options{}, "1h", "[30m]"},
		{"scaled", 1, rules.Options{WindowScale: 1.0 / 60}, "1m", "[30s]"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rf, _, err := rules.Generate(rulestest.OneProbe(rulestest.Probe("chat", tc.rate, 0.99, config.SLO{})), tc.o)
			if err != nil {
				t.Fatal(err)
			}
			r := rulestest.Alerts(rf, rules.AlertInFlightCap)[0]
			if r.For != tc.forD || !strings.Contains(r.Expr, tc.win) {
				t.Errorf("for = %s, want %s; expr %s, want window %s", r.For, tc.forD, r.Expr, tc.win)
			}
			if !strings.Contains(r.Annotations["description"], "for "+tc.forD) || !strings.Contains(r.Annotations["description"], "last "+strings.Trim(tc.win, "[]")) {
				t.Errorf("description does not state the window and for: %s", r.Annotations["description"])
			}
		})
	}
}

func TestGenerateScaledDurations(t *testing.T) {
	rf, _, err := rules.Generate(rulestest.OneProbe(rulestest.Probe("chat", 5, 0.99, config.SLO{TTFT: rulestest.Sec(time.Second)})), rules.Options{WindowScale: 1.0 / 60, MinRequests: 5})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, alert, forD, window string
	}{
		{"page: no for:, scaled windows", rules.AlertFastBurn, "", "10s"},
		{"ticket for", rules.AlertSlowBurn, "15s", "24m"},
		{"latency for and a window widened to 100 requests", rules.AlertLatencyHigh, "10s", "[20s]"},
		{"health for", rules.AlertScrapeFailing, "5s", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := rulestest.Alerts(rf, tc.alert)[0]
			if r.For != tc.forD {
				t.Errorf("for = %s, want %s", r.For, tc.forD)
			}
			if tc.window != "" && r.Labels["long_window"] != tc.window && !strings.Contains(r.Expr, tc.window) {
				t.Errorf("window %s not in %v / %s", tc.window, r.Labels, r.Expr)
			}
		})
	}
}

func TestGenerateDeterministic(t *testing.T) {
	cfg := &config.Config{
		Targets: []config.Target{{Name: "b"}, {Name: "a", Probes: []string{"z"}}},
		Probes: []config.Probe{
			rulestest.Probe("z", 0.01, 0.999, config.SLO{E2EL: rulestest.Sec(time.Minute)}),
			rulestest.Probe("y", 1, 0.99, config.SLO{TTFT: rulestest.Sec(time.Second), TPOT: rulestest.Sec(time.Millisecond)}),
		},
	}
	both := func() []byte {
		rb, tb := render(t, cfg)
		return append(rb, tb...)
	}
	first := both()
	for i := range 20 {
		if !bytes.Equal(first, both()) {
			t.Fatalf("render %d differs from the first", i)
		}
	}
	t.Run("config order of pairs", func(t *testing.T) {
		var pairs []string
		rf, _, _ := rules.Generate(cfg, rules.Options{})
		for _, r := range rulestest.Alerts(rf, rules.AlertNotCompleting) {
			pairs = append(pairs, r.Labels["target"]+"/"+r.Labels["probe"])
		}
		if got := strings.Join(pairs, ","); got != "b/z,b/y,a/z" {
			t.Errorf("pairs = %s", got)
		}
	})
	t.Run("warnings in the header", func(t *testing.T) {
		if !bytes.Contains(first, []byte("# warning: target \"b\" probe \"z\"")) {
			t.Errorf("header has no warning:\n%s", first[:300])
		}
	})
}

func TestGenerateErrors(t *testing.T) {
	cases := []struct {
		name string
		cfg  *config.Config
		o    rules.Options
		want string
	}{
		{"nil config", nil, rules.Options{}, "nil config"},
		{"zero rate", rulestest.OneProbe(rulestest.Probe("p", 0, 0.99, config.SLO{})), rules.Options{}, `probe "p": rate`},
		{"infinite rate", rulestest.OneProbe(rulestest.Probe("p", math.Inf(1), 0.99, config.SLO{})), rules.Options{}, `probe "p": rate`},
		{"objective 1", rulestest.OneProbe(rulestest.Probe("p", 1, 1, config.SLO{})), rules.Options{}, `probe "p": objective 1`},
		{"negative scale", rulestest.OneProbe(rulestest.Probe("p", 1, 0.99, config.SLO{})), rules.Options{WindowScale: -1}, "must not be negative"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := rules.Generate(tc.cfg, tc.o)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
			if _, err := promtest.Generate(tc.cfg, tc.o); err == nil {
				t.Errorf("Tests accepted what Generate refused")
			}
		})
	}
}

// TestTargetDownWindow: VLLMProbeTargetDown judges a target over the
// shortest window expected to hold 10 of its requests, all its probes
// counted, and warns when even 6h holds fewer.
func TestTargetDownWindow(t *testing.T) {
	cases := []struct {
		name    string
		rates   []float64
		window  string
		warning string
	}{
		{"two probes of 0.02/s fill 5m", []float64{0.02, 0.02}, "5m", ""},
		{"one probe of 0.02/s needs 30m", []float64{0.02}, "30m", ""},
		{"one request per 10m needs 2h", []float64{1.0 / 600}, "2h", ""},
		{"one request per hour: 6h, with a warning", []float64{1.0 / 3600}, "6h",
			`target "llama" target down: rate 0.000277778/s holds 6.0 requests in 6h (want 10); it fires only once 5 requests ended in 6h, at least 90% in server_failure`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := &config.Config{Targets: []config.Target{{Name: "llama"}}}
			for i, r := range tc.rates {
				cfg.Probes = append(cfg.Probes, rulestest.Probe(fmt.Sprintf("p%d", i), r, 0.99, config.SLO{}))
			}
			rf, warnings, err := rules.Generate(cfg, rules.Options{})
			if err != nil {
				t.Fatal(err)
			}
			rs := rulestest.Alerts(rf, rules.AlertTargetDown)
			if len(rs) != 1 || !strings.Contains(rs[0].Expr, "["+tc.window+"]") || rs[0].Labels["target"] != "llama" {
				t.Fatalf("target down rules %v, want one over %s", rs, tc.window)
			}
			var got []string
			for _, w := range warnings {
				if w.Probe == "" {
					got = append(got, w.String())
				}
			}
			if want := []string{tc.warning}; tc.warning == "" && len(got) != 0 || tc.warning != "" && fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("target warnings %q, want %q", got, tc.warning)
			}
		})
	}
}
