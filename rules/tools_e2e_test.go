//go:build e2e

package rules_test

import (
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vllm-prober/vllm-prober/config"
	"github.com/vllm-prober/vllm-prober/internal/daemontest"
	"github.com/vllm-prober/vllm-prober/rules"
	"github.com/vllm-prober/vllm-prober/rules/internal/rulestest"
	"github.com/vllm-prober/vllm-prober/rules/promtest"
)

// tool runs a Prometheus tool, which these tests require.
func tool(t *testing.T, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(daemontest.RequireTool(t, name), args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

func writeGenerated(t *testing.T, dir string, cfg *config.Config, o rules.Options) {
	t.Helper()
	rf, warnings, err := rules.Generate(cfg, o)
	if err != nil {
		t.Fatal(err)
	}
	tf, err := promtest.Generate(cfg, o)
	if err != nil {
		t.Fatal(err)
	}
	writeYAML(t, dir, map[string]any{"rules.yml": rf, "rules_test.yml": tf}, warnings)
}

// writeYAML marshals each value into the file of its name in dir.
func writeYAML(t *testing.T, dir string, files map[string]any, warnings []rules.Warning) {
	t.Helper()
	for name, v := range files {
		b, err := rules.Marshal(v, warnings)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestPromtoolPassesGeneratedRules(t *testing.T) {
	full, err := config.Load(rulestest.ExampleConfig)
	if err != nil {
		t.Fatal(err)
	}
	lowRate := &config.Config{
		Targets: []config.Target{{Name: "a"}, {Name: "b", Probes: []string{"rare"}}},
		Probes: []config.Probe{
			rulestest.Probe("rare", 0.01, 0.999, config.SLO{E2EL: rulestest.Sec(20 * time.Second)}),
			rulestest.Probe("busy", 3, 0.9999, config.SLO{TTFT: rulestest.Sec(500 * time.Millisecond), TPOT: rulestest.Sec(50 * time.Millisecond)}),
		},
	}
	cases := []struct {
		name string
		cfg  *config.Config
		o    rules.Options
	}{
		{"full example", full, rules.Options{}},
		{"full example, e2e windows", full, rules.Options{WindowScale: 1.0 / 60, MinRequests: 5, MinLatencySamples: 10}},
		{"low rates and strict objectives", lowRate, rules.Options{Job: "probes"}},
		{"low rates, e2e windows", lowRate, rules.Options{WindowScale: 1.0 / 60}},
		{"lean and native-only histograms", rulestest.LeanConfig(), rules.Options{}},
		{"reasoning: ttft and ttfa SLOs", rulestest.ReasoningConfig(), rules.Options{}},
		{"fleet and fingerprint", rulestest.FleetConfig(), rules.Options{}},
		{"fleet and fingerprint, e2e windows", rulestest.FleetConfig(), rules.Options{WindowScale: 1.0 / 60}},
		{"fleet with classic and native-only histograms", rulestest.MixedFleetConfig(), rules.Options{}},
		{"discovery by dns, file_sd and http_sd", rulestest.DiscoveryConfig(), rules.Options{}},
		{"discovery by dns, file_sd and http_sd, e2e windows", rulestest.DiscoveryConfig(), rules.Options{WindowScale: 1.0 / 60}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			writeGenerated(t, dir, tc.cfg, tc.o)
			tool(t, "promtool", "check", "rules", filepath.Join(dir, "rules.yml"))
			tool(t, "promtool", "test", "rules", filepath.Join(dir, "rules_test.yml"))
		})
	}
}

func TestPromtoolPassesCheckedInFiles(t *testing.T) {
	cases := []struct {
		name string
		args []string
	}{
		{"check rules", []string{"check", "rules", filepath.Join(deployDir, "rules.yml")}},
		{"test rules", []string{"test", "rules", filepath.Join(deployDir, "rules_test.yml")}},
		{"check config", []string{"check", "config", filepath.Join(deployDir, "prometheus.yml")}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { tool(t, "promtool", tc.args...) })
	}
}

func TestAmtoolRoutesEveryAlert(t *testing.T) {
	tool(t, "amtool", "check-config", alertmanagerConfig)
	full, err := config.Load(rulestest.ExampleConfig)
	if err != nil {
		t.Fatal(err)
	}
	routes := map[string]string{} // alertname/severity -> receiver
	for _, cfg := range []*config.Config{full, rulestest.FleetConfig()} {
		rf, _, err := rules.Generate(cfg, rules.Options{})
		if err != nil {
			t.Fatal(err)
		}
		for r := range rf.Rules() {
			if r.Alert != "" {
				routes[r.Alert+"/"+r.Labels["severity"]] = map[string]string{rules.SeverityPage: "page", rules.SeverityTicket: "ticket"}[r.Labels["severity"]]
			}
		}
	}
	routes["SomethingElse/"] = "default"
	for _, k := range slices.Sorted(maps.Keys(routes)) {
		alert, severity, _ := strings.Cut(k, "/")
		t.Run(k, func(t *testing.T) {
			args := []string{"config", "routes", "test", "--config.file=" + alertmanagerConfig, "--verify.receivers=" + routes[k],
				"alertname=" + alert, "target=llama-8b", "probe=chat-short"}
			if severity != "" {
				args = append(args, "severity="+severity)
			}
			tool(t, "amtool", args...)
		})
	}
}
