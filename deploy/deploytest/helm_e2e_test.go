//go:build e2e

package deploytest

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/vllm-prober/vllm-prober/config"
	"github.com/vllm-prober/vllm-prober/rules"
)

var chartDir = filepath.Join(repoRoot, "deploy", "helm", "vllm-prober")

// helmCase is one way of installing the chart.
type helmCase struct {
	name     string
	values   string   // file under the chart's ci/ directory, "" for defaults
	args     []string // extra helm arguments
	sidecar  bool
	external map[string]bool // Secrets the values expect to exist already
	rules    bool            // renders a PrometheusRule from ci/<name>-rules.yml
	shards   int             // prober Deployments expected, each with a share of the targets
	benchJob bool            // renders the sharded bench's Jobs (checkBenchJob)
	fleet    bool            // holds a DNS fleet target naming deploy/kubernetes/vllm-headless
}

var helmCases = []helmCase{
	{name: "default"},
	{name: "default-sidecar", args: []string{"--set", "mode=sidecar"}, sidecar: true},
	{name: "central-created-secret", args: []string{"--set", "auth.enabled=true", "--set", "auth.apiKeys.vllm=k", "--set", "targets[0].name=vllm", "--set", "targets[0].url=http://vllm.llm.svc:8000", "--set", "targets[0].apiKeySecretKey=vllm", "--set", "targets[1].name=other", "--set", "targets[1].url=http://other.llm.svc:8000"}},
	{name: "sidecar", values: "sidecar-values.yaml", sidecar: true, rules: true},
	{name: "central", values: "central-values.yaml", external: map[string]bool{"vllm-api-keys": true}, rules: true},
	{name: "central-fleet", values: "central-fleet-values.yaml", fleet: true},
	{name: "central-sharded", values: "central-values.yaml", args: []string{"--set", "shards=2", "--set", "prometheusRule.enabled=false"}, external: map[string]bool{"vllm-api-keys": true}, shards: 2},
	{name: "bench-job", values: "bench-job-values.yaml", benchJob: true},
	{name: "bench-job-existing-claim", args: []string{"--set", "benchJob.enabled=true", "--set", "benchJob.startAt=2026-01-02T15:04:05Z", "--set", "benchJob.persistence.existingClaim=results"}},
	{name: "sidecar-ignores-shards", values: "sidecar-values.yaml", args: []string{"--set", "shards=3", "--set", "prometheusRule.enabled=false"}, sidecar: true},
}

func helm(t *testing.T, args ...string) []byte {
	t.Helper()
	var stderr bytes.Buffer
	cmd := goTool("helm", args...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("helm %q: %v\n%s", args, err, stderr.String())
	}
	return out
}

func (c helmCase) helmArgs(withRules bool) []string {
	var args []string
	if c.values != "" {
		args = append(args, "-f", filepath.Join(chartDir, "ci", c.values))
	}
	args = append(args, c.args...)
	if c.rules && withRules {
		args = append(args, "--set-file", "prometheusRule.rules="+c.rulesFile())
	}
	if c.rules && !withRules {
		args = append(args, "--set", "prometheusRule.enabled=false")
	}
	return args
}

func (c helmCase) rulesFile() string { return filepath.Join(chartDir, "ci", c.name+"-rules.yml") }

func TestHelmChart(t *testing.T) {
	for _, c := range helmCases {
		t.Run(c.name, func(t *testing.T) {
			if *update && c.rules {
				writeChartRules(t, c)
				return
			}
			helm(t, append([]string{"lint", "--strict", chartDir}, c.helmArgs(true)...)...)
			out := helm(t, append([]string{"template", "release", chartDir}, c.helmArgs(true)...)...)
			m := newManifests()
			if err := decodeStream(m, out); err != nil {
				t.Fatal(err)
			}
			cfgs, errs := checkManifests(t, m, c.sidecar, c.external)
			for _, err := range errs {
				t.Error(err)
			}
			if c.shards > 0 {
				checkShards(t, cfgs, c.shards, 3)
			}
			if c.fleet {
				checkFleetConfigs(t, cfgs)
			}
			if c.benchJob {
				for _, err := range checkBenchJob(m) {
					t.Error(err)
				}
			}
			if c.rules && len(cfgs) == 1 && !*update {
				compareRules(t, m, cfgs[0], "the chart with ci/"+c.values, nil)
			}
		})
	}
}

// checkShards requires shards configs that split targets between them
// without overlap.
func checkShards(t *testing.T, cfgs []*config.Config, shards, targets int) {
	t.Helper()
	if len(cfgs) != shards {
		t.Fatalf("%d prober configs, want %d shards", len(cfgs), shards)
	}
	seen := map[string]bool{}
	for _, cfg := range cfgs {
		for _, tg := range cfg.Targets {
			if seen[tg.Name] {
				t.Errorf("target %s is in two shards", tg.Name)
			}
			seen[tg.Name] = true
		}
	}
	if len(seen) != targets {
		t.Errorf("shards hold %d targets, want %d", len(seen), targets)
	}
}

// writeChartRules regenerates ci/<name>-rules.yml, a plain rule file as
// `vllm-prober rules` prints it, from the config the chart renders.
func writeChartRules(t *testing.T, c helmCase) {
	t.Helper()
	out := helm(t, append([]string{"template", "release", chartDir}, c.helmArgs(false)...)...)
	m := newManifests()
	if err := decodeStream(m, out); err != nil {
		t.Fatal(err)
	}
	cfg, errs := checkProber(m, m.deployments[0], t.TempDir())
	if cfg == nil {
		t.Fatal(errs)
	}
	if err := writeRuleFile(c.rulesFile(), "the config the chart renders with ci/"+c.values, cfg); err != nil {
		t.Fatal(err)
	}
}

// TestHelmChartRejects renders values the chart must refuse.
func TestHelmChartRejects(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"unknown mode", []string{"--set", "mode=bogus"}},
		{"unknown value", []string{"--set", "serviceMonitor.bogus=1"}},
		{"auth without keys", []string{"--set", "auth.enabled=true"}},
		{"api key without auth", []string{"--set", "targets[0].apiKeySecretKey=k", "--set", "targets[0].name=a", "--set", "targets[0].url=http://a:8000"}},
		{"rules without rule file", []string{"--set", "prometheusRule.enabled=true"}},
		{"rules not a rule file", []string{"--set", "prometheusRule.enabled=true", "--set", "prometheusRule.rules=a: b"}},
		{"no probes", []string{"--set", "probes=null"}},
		{"target without url or discovery", []string{"--set", "targets[0].name=a"}},
		{"empty shard", []string{"--set", "shards=2"}},
		{"zero shards", []string{"--set", "shards=0"}},
		{"bench job without a start", []string{"--set", "benchJob.enabled=true"}},
		{"bench job with zero shards", []string{"--set", "benchJob.enabled=true", "--set", "benchJob.startAt=2026-01-02T15:04:05Z", "--set", "benchJob.shards=0"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := goTool("helm", append([]string{"template", "release", chartDir}, tc.args...)...)
			out, err := cmd.CombinedOutput()
			if err == nil {
				t.Fatalf("helm template accepted %q:\n%s", tc.args, out)
			}
			if !bytes.Contains(out, []byte("Error:")) {
				t.Fatalf("helm did not report an error: %v\n%s", err, out)
			}
		})
	}
}

// writeRuleFile writes the rules generated from cfg to path exactly as
// `vllm-prober rules` prints them, behind a line naming the source.
func writeRuleFile(path, source string, cfg *config.Config) error {
	rf, warnings, err := rules.Generate(cfg, rules.Options{})
	if err != nil {
		return fmt.Errorf("generate rules: %w", err)
	}
	data, err := rules.Marshal(rf, warnings)
	if err != nil {
		return fmt.Errorf("encode %s: %w", path, err)
	}
	header := fmt.Sprintf("# Source: %s; to regenerate, %s.\n", source, regenerateHint)
	return os.WriteFile(path, append([]byte(header), data...), 0o644)
}
