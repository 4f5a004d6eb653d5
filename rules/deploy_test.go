package rules_test

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/vllm-prober/vllm-prober/config"
	"github.com/vllm-prober/vllm-prober/rules"
	"github.com/vllm-prober/vllm-prober/rules/internal/rulestest"
	"github.com/vllm-prober/vllm-prober/rules/promtest"
)

var update = flag.Bool("update", false, "rewrite the checked-in deploy/prometheus files from deploy/examples/full.yml")

const deployDir = "../deploy/prometheus"

// render returns what `vllm-prober rules` writes for cfg with default
// options: the rule file and (with --tests) its promtool tests.
func render(t *testing.T, cfg *config.Config) (ruleFile, testFile []byte) {
	t.Helper()
	rf, warnings, err := rules.Generate(cfg, rules.Options{})
	if err != nil {
		t.Fatal(err)
	}
	rb, err := rules.Marshal(rf, warnings)
	if err != nil {
		t.Fatal(err)
	}
	tf, err := promtest.Generate(cfg, rules.Options{})
	if err != nil {
		t.Fatal(err)
	}
	tb, err := rules.Marshal(tf, nil)
	if err != nil {
		t.Fatal(err)
	}
	return rb, tb
}

// checkedIn renders what `vllm-prober rules` writes for the example config:
// the rule file and its promtool tests.
func checkedIn(t *testing.T) map[string][]byte {
	t.Helper()
	cfg, err := config.Load(rulestest.ExampleConfig)
	if err != nil {
		t.Fatal(err)
	}
	rb, tb := render(t, cfg)
	return map[string][]byte{"rules.yml": rb, "rules_test.yml": tb}
}

func TestCheckedInRulesMatchGenerated(t *testing.T) {
	for name, want := range checkedIn(t) {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(deployDir, name)
			if *update {
				if err := os.WriteFile(path, want, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			got, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s differs from what `vllm-prober rules --config.file=deploy/examples/full.yml` generates; regenerate with: go test ./rules -run TestCheckedInRulesMatchGenerated -update", path)
			}
		})
	}
}
