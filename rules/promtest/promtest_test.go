package promtest

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vllm-prober/vllm-prober/config"
	"github.com/vllm-prober/vllm-prober/rules"
	"github.com/vllm-prober/vllm-prober/rules/internal/rulestest"
)

func TestGenerateScenarios(t *testing.T) {
	cfg := rulestest.OneProbe(rulestest.Probe("chat", 0.2, 0.99, config.SLO{TTFT: rulestest.Sec(time.Second)}))
	tf, err := Generate(cfg, rules.Options{RuleFileName: "r.yml"})
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
		{"healthy: no alert fires", rules.AlertFastBurn, 0, ""},
		{"healthy: no alert fires", rules.AlertLatencyHigh, 0, ""},
		{"fast burn: llama/chat fails every request", rules.AlertFastBurn, 2, "50.0x too fast over 10m"},
		{"latency: llama/chat p99 ttft above its SLO", rules.AlertLatencyHigh, 1, "1.99s"},
		{"client TTFT far above the server's: target llama", rules.AlertClientTTFTAboveServer, 1, "1.35s"},
		{"scrape failing: target llama", rules.AlertScrapeFailing, 1, "target llama"},
		{"prober absent", rules.AlertProberAbsent, 1, "vllm-prober"},
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

// TestGenerateCoversEveryAlert: every generated alert has a promtool scenario
// where it fires and one where it stays quiet, and the overload and
// worked-example scenarios check the recorded series.
func TestGenerateCoversEveryAlert(t *testing.T) {
	full, err := config.Load(rulestest.ExampleConfig)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		cfg  *config.Config
		o    rules.Options
	}{
		{"full example", full, rules.Options{}},
		{"one probe, e2e windows", rulestest.OneProbe(rulestest.Probe("chat", 10, 0.99, config.SLO{TTFT: rulestest.Sec(2 * time.Second)})), rules.Options{WindowScale: 1.0 / 60}},
		{"fleet and fingerprint", rulestest.FleetConfig(), rules.Options{}},
		{"fleet and fingerprint, e2e windows", rulestest.FleetConfig(), rules.Options{WindowScale: 1.0 / 60}},
		{"discovery by dns, file_sd and http_sd, e2e windows", rulestest.DiscoveryConfig(), rules.Options{WindowScale: 1.0 / 60}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tf, err := Generate(tc.cfg, tc.o)
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
			rf, _, err := rules.Generate(tc.cfg, tc.o)
			if err != nil {
				t.Fatal(err)
			}
			for _, a := range allAlerts {
				if len(rulestest.Alerts(rf, a)) == 0 {
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

// TestGenerateLatencyCoversTTFA: the generated latency scenario breaks every
// SLO of its pair, TTFA included, and expects each p99 alert.
func TestGenerateLatencyCoversTTFA(t *testing.T) {
	tf, err := Generate(rulestest.ReasoningConfig(), rules.Options{})
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
