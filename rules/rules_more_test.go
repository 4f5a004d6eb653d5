package rules

import (
	"bytes"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/vllm-prober/vllm-prober/config"
)

func TestGenerateLatency(t *testing.T) {
	slo := config.SLO{TTFT: sec(time.Second), TPOT: sec(100 * time.Millisecond), E2EL: sec(20 * time.Second)}
	cases := []struct {
		name    string
		rate    float64
		slo     config.SLO
		want    []string // slo=window>threshold
		warning bool
	}{
		{"every SLO at 0.2/s", 0.2, slo, []string{"ttft=10m>1", "tpot=10m>0.1", "e2el=10m>20"}, false},
		{"only the configured SLO", 0.2, config.SLO{TPOT: sec(50 * time.Millisecond)}, []string{"tpot=10m>0.05"}, false},
		{"no SLO, no alert", 0.2, config.SLO{}, nil, false},
		{"ttfa beside ttft", 0.2, config.SLO{TTFT: sec(time.Second), TTFA: sec(5 * time.Second)}, []string{"ttft=10m>1", "ttfa=10m>5"}, false},
		{"0.02/s widens to hold 100 requests", 0.02, config.SLO{TTFT: sec(time.Second)}, []string{"ttft=1h25m>1"}, true},
		{"0.001/s drops the alert", 0.001, config.SLO{TTFT: sec(time.Second)}, nil, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rf, warnings, err := Generate(oneProbe(testProbe("chat", tc.rate, 0.9, tc.slo)), Options{})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, r := range alerts(rf, AlertLatencyHigh) {
				w := r.Expr[strings.Index(r.Expr, "[")+1 : strings.Index(r.Expr, "]")]
				thr := r.Expr[strings.LastIndex(r.Expr, "> ")+2:]
				got = append(got, r.Labels["slo"]+"="+w+">"+thr)
				if !strings.Contains(r.Expr, sloMetric[r.Labels["slo"]]+"_bucket") || r.Labels["target"] != "llama" {
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
		{"not completing per pair", AlertNotCompleting, `unless`, "5m"},
		{"scrape failing", AlertScrapeFailing, `max by (target) (vllm_probe_server_scrape_success{job="vllm-prober"}) == 0`, "5m"},
		{"schedule lag", AlertScheduleLag, `vllm_probe_schedule_lag_seconds_bucket{job="vllm-prober"}[10m]))) > 1`, "5m"},
		{"client ttft above server", AlertClientTTFTAboveServer, `(target:vllm_probe_time_to_first_token_seconds:p50_rate10m - target:vllm_time_to_first_token_seconds:p50_rate10m) > 0.5`, "10m"},
		{"target down: per target, a minimum-request guard instead of a for:", AlertTargetDown,
			`>= 0.9 and sum by (target) (increase(vllm_probe_requests_total{job="vllm-prober",target="llama",disposition!="cancelled"}[5m])) >= 5`, ""},
		{"prober down", AlertProberDown, `up{job="vllm-prober"} == 0`, "5m"},
		{"in-flight cap: a sustained share of shed requests, not one", AlertInFlightCap,
			`{job="vllm-prober",target="llama",probe="chat",reason="in_flight_cap"}[5m])) / sum by (target, probe) (rate(vllm_probe_requests_offered_total{job="vllm-prober",target="llama",probe="chat"}[5m])) > 0.01`, "15m"},
	}
	rf, _, err := Generate(oneProbe(testProbe("chat", 0.2, 0.99, config.SLO{})), Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rs := alerts(rf, tc.alert)
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
		o         Options
		forD, win string
	}{
		{"default ticket for", 1, Options{}, "15m", "[5m]"},
		{"short ticket for", 1, Options{TicketFor: time.Minute}, "10m", "[5m]"},
		{"low rate widens the window", 0.01, Options{}, "1h", "[30m]"},
		{"scaled", 1, Options{WindowScale: 1.0 / 60}, "1m", "[30s]"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rf, _, err := Generate(oneProbe(testProbe("chat", tc.rate, 0.99, config.SLO{})), tc.o)
			if err != nil {
				t.Fatal(err)
			}
			r := alerts(rf, AlertInFlightCap)[0]
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
	rf, _, err := Generate(oneProbe(testProbe("chat", 5, 0.99, config.SLO{TTFT: sec(time.Second)})), Options{WindowScale: 1.0 / 60, MinRequests: 5})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, alert, forD, window string
	}{
		{"page: no for:, scaled windows", AlertFastBurn, "", "10s"},
		{"ticket for", AlertSlowBurn, "15s", "24m"},
		{"latency for and a window widened to 100 requests", AlertLatencyHigh, "10s", "[20s]"},
		{"health for", AlertScrapeFailing, "5s", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := alerts(rf, tc.alert)[0]
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
			testProbe("z", 0.01, 0.999, config.SLO{E2EL: sec(time.Minute)}),
			testProbe("y", 1, 0.99, config.SLO{TTFT: sec(time.Second), TPOT: sec(time.Millisecond)}),
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
		rf, _, _ := Generate(cfg, Options{})
		for _, r := range alerts(rf, AlertNotCompleting) {
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
		o    Options
		want string
	}{
		{"nil config", nil, Options{}, "nil config"},
		{"zero rate", oneProbe(testProbe("p", 0, 0.99, config.SLO{})), Options{}, `probe "p": rate`},
		{"infinite rate", oneProbe(testProbe("p", math.Inf(1), 0.99, config.SLO{})), Options{}, `probe "p": rate`},
		{"objective 1", oneProbe(testProbe("p", 1, 1, config.SLO{})), Options{}, `probe "p": objective 1`},
		{"negative scale", oneProbe(testProbe("p", 1, 0.99, config.SLO{})), Options{WindowScale: -1}, "must not be negative"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := Generate(tc.cfg, tc.o)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
			if _, err := Tests(tc.cfg, tc.o); err == nil {
				t.Errorf("Tests accepted what Generate refused")
			}
		})
	}
}

func TestTestsScenarios(t *testing.T) {
	cfg := oneProbe(testProbe("chat", 0.2, 0.99, config.SLO{TTFT: sec(time.Second)}))
	tf, err := Tests(cfg, Options{RuleFileName: "r.yml"})
	if err != nil {
		t.Fatal(err)
	}
	if len(tf.RuleFiles) != 1 || tf.RuleFiles[0] != "r.yml" {
		t.Errorf("rule_files = %v", tf.RuleFiles)
	}
	cases := []struct {
		group, alert string
		firing       int
		value        string
	}{
		{"healthy: no alert fires", AlertFastBurn, 0, ""},
		{"healthy: no alert fires", AlertLatencyHigh, 0, ""},
		{"fast burn: llama/chat fails every request", AlertFastBurn, 2, "50.0x too fast over 10m"},
		{"latency: llama/chat p99 ttft above its SLO", AlertLatencyHigh, 1, "1.99s"},
		{"client TTFT far above the server's: target llama", AlertClientTTFTAboveServer, 1, "1.35s"},
		{"scrape failing: target llama", AlertScrapeFailing, 1, "target llama"},
		{"prober absent", AlertProberAbsent, 1, "vllm-prober"},
	}
	for _, tc := range cases {
		t.Run(tc.group+"/"+tc.alert, func(t *testing.T) {
			for _, g := range tf.Tests {
				if g.Name != tc.group {
					continue
				}
				for _, at := range g.AlertRuleTests {
					if at.Alertname != tc.alert {
						continue
					}
					if len(at.ExpAlerts) != tc.firing {
						t.Fatalf("%d expected alerts, want %d", len(at.ExpAlerts), tc.firing)
					}
					if tc.firing > 0 && !strings.Contains(at.ExpAlerts[0].ExpAnnotations["summary"], tc.value) {
						t.Errorf("summary %q does not contain %q", at.ExpAlerts[0].ExpAnnotations["summary"], tc.value)
					}
					return
				}
			}
			t.Fatalf("no %s test in group %q", tc.alert, tc.group)
		})
	}
}

// TestTestsCoverEveryAlert: every generated alert has a promtool scenario
// where it fires and one where it stays quiet, and the overload and
// worked-example scenarios check the recorded series.
func TestTestsCoverEveryAlert(t *testing.T) {
	full, err := config.Load(exampleConfig)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		cfg  *config.Config
		o    Options
	}{
		{"full example", full, Options{}},
		{"one probe, e2e windows", oneProbe(testProbe("chat", 10, 0.99, config.SLO{TTFT: sec(2 * time.Second)})), Options{WindowScale: 1.0 / 60}},
		{"fleet and fingerprint", fleetConfig(), Options{}},
		{"fleet and fingerprint, e2e windows", fleetConfig(), Options{WindowScale: 1.0 / 60}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tf, err := Tests(tc.cfg, tc.o)
			if err != nil {
				t.Fatal(err)
			}
			firing, quiet, exprs := map[string]bool{}, map[string]bool{}, map[string]bool{}
			for _, g := range tf.Tests {
				for _, at := range g.AlertRuleTests {
					if len(at.ExpAlerts) > 0 {
						firing[at.Alertname] = true
					} else {
						quiet[at.Alertname] = true
					}
				}
				if len(g.ExprTests) > 0 {
					exprs[strings.SplitN(g.Name, ":", 2)[0]] = true
				}
			}
			rf, _, err := Generate(tc.cfg, tc.o)
			if err != nil {
				t.Fatal(err)
			}
			for _, a := range allAlerts {
				if len(alerts(rf, a)) == 0 {
					if tc.name == "fleet and fingerprint" {
						t.Errorf("%s is not generated for the fleet config", a)
					}
					continue
				}
				if !firing[a] || !quiet[a] {
					t.Errorf("%s: firing scenario %v, quiet scenario %v", a, firing[a], quiet[a])
				}
			}
			for _, g := range []string{"healthy", "overload", "abandoned", "worked example"} {
				if !exprs[g] {
					t.Errorf("scenario %q checks no recorded series", g)
				}
			}
		})
	}
}

func TestHumanizeDuration(t *testing.T) {
	cases := []struct {
		v    float64
		want string
	}{{0, "0s"}, {0.199, "199ms"}, {1.99, "1.99s"}, {90, "1m 30s"}, {3700, "1h 1m 40s"}, {90000, "1d 1h 0m 0s"}, {0.0000015, "1.5us"}}
	for _, tc := range cases {
		t.Run(tc.want, func(t *testing.T) {
			if got := humanizeDuration(tc.v); got != tc.want {
				t.Errorf("humanizeDuration(%v) = %q, want %q", tc.v, got, tc.want)
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
				cfg.Probes = append(cfg.Probes, testProbe(fmt.Sprintf("p%d", i), r, 0.99, config.SLO{}))
			}
			rf, warnings, err := Generate(cfg, Options{})
			if err != nil {
				t.Fatal(err)
			}
			rs := alerts(rf, AlertTargetDown)
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
