package main

import (
	"os"
	"path/filepath"
	"testing"
)

func TestRulesCommand(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "rules.yml")
	checkedIn, err := os.ReadFile("deploy/prometheus/rules.yml")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name     string
		args     []string
		wantCode int
		want     []string
	}{
		{"low-traffic warnings on stderr", []string{"rules", "--config.file=deploy/examples/full.yml", "--output=" + out}, 0,
			[]string{"Alert rule adjusted", "probe=chat-json", "windows widened from 30m/5m to 1h/10m"}},
		{"tests", []string{"rules", "--tests", "--config.file=deploy/examples/minimal.yml", "--rule-file=r.yml"}, 0,
			[]string{"rule_files:\n  - r.yml", "alert_rule_test:", "alertname: VLLMProbeErrorBudgetFastBurn"}},
		{"scaled windows and job", []string{"rules", "--config.file=deploy/examples/minimal.yml", "--window-scale=0.0166667", "--min-requests=1", "--job=probers"}, 0,
			[]string{`ratio_rate5s`, `absent(up{job="probers"})`, "for: 5s"}},
		{"invalid config", []string{"rules", "--config.file=config/testdata/invalid-api.yml"}, 1, []string{"invalid-api.yml", "responses"}},
		{"missing config", []string{"rules", "--config.file=no-such.yml"}, 1, []string{"no-such.yml"}},
		{"negative scale", []string{"rules", "--config.file=deploy/examples/minimal.yml", "--window-scale=-1"}, 1, []string{"must not be negative"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			checkRun(t, tc.args, tc.wantCode, tc.want)
		})
	}
	t.Run("output file is the checked-in rule file", func(t *testing.T) {
		b, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != string(checkedIn) {
			t.Errorf("--output differs from deploy/prometheus/rules.yml")
		}
	})
}
