package deploytest

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	monv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"go.yaml.in/yaml/v3"

	"github.com/vllm-prober/vllm-prober/config"
	"github.com/vllm-prober/vllm-prober/rules"
)

// update rewrites the generated PrometheusRule files instead of comparing.
var update = flag.Bool("update", false, "rewrite the generated PrometheusRule manifests and chart example rules")

const regenerateHint = "run\n# `go test -tags e2e ./deploy/deploytest -run 'PrometheusRule|HelmChart' -update`"

// generatedGroups generates the rule groups for cfg exactly as
// `vllm-prober rules` does with its defaults.
func generatedGroups(cfg *config.Config) ([]rules.RuleGroup, error) {
	rf, _, err := rules.Generate(cfg, rules.Options{})
	if err != nil {
		return nil, fmt.Errorf("generate rules: %w", err)
	}
	return rf.Groups, nil
}

// operatorGroups converts PrometheusRule groups to the generator's types so
// the two compare field by field.
func operatorGroups(groups []monv1.RuleGroup) []rules.RuleGroup {
	out := make([]rules.RuleGroup, 0, len(groups))
	for _, g := range groups {
		rg := rules.RuleGroup{Name: g.Name}
		if g.Interval != nil {
			rg.Interval = string(*g.Interval)
		}
		for _, r := range g.Rules {
			rr := rules.Rule{Record: r.Record, Alert: r.Alert, Expr: r.Expr.String(), Labels: r.Labels, Annotations: r.Annotations}
			if r.For != nil {
				rr.For = string(*r.For)
			}
			rg.Rules = append(rg.Rules, rr)
		}
		out = append(out, rg)
	}
	return out
}

// ruleManifest is a PrometheusRule written from the generator's types.
type ruleManifest struct {
	APIVersion string `yaml:"apiVersion"`
	Kind       string `yaml:"kind"`
	Metadata   struct {
		Name   string            `yaml:"name"`
		Labels map[string]string `yaml:"labels"`
	} `yaml:"metadata"`
	Spec struct {
		Groups []rules.RuleGroup `yaml:"groups"`
	} `yaml:"spec"`
}

// writeRuleManifest writes a PrometheusRule holding groups to path.
func writeRuleManifest(path, name, source string, groups []rules.RuleGroup) error {
	var rm ruleManifest
	rm.APIVersion, rm.Kind = "monitoring.coreos.com/v1", "PrometheusRule"
	rm.Metadata.Name = name
	rm.Metadata.Labels = map[string]string{"app.kubernetes.io/name": "vllm-prober"}
	rm.Spec.Groups = groups
	var buf bytes.Buffer
	fmt.Fprintf(&buf, "# Generated from the prober config in %s\n# as `vllm-prober rules` does; to regenerate, %s.\n", source, regenerateHint)
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(rm); err != nil {
		return fmt.Errorf("encode %s: %w", path, err)
	}
	return os.WriteFile(path, buf.Bytes(), 0o644)
}

// compareRules checks that the PrometheusRule in m holds exactly the rules
// generated from cfg; with -update it calls write with them instead.
func compareRules(t *testing.T, m *manifests, cfg *config.Config, what string, write func([]rules.RuleGroup) error) {
	t.Helper()
	want, err := generatedGroups(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := write(want); err != nil {
			t.Fatal(err)
		}
		return
	}
	if len(m.rules) != 1 {
		t.Fatalf("want one PrometheusRule, got %d", len(m.rules))
	}
	got := operatorGroups(m.rules[0].Spec.Groups)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("the PrometheusRule of %s does not hold the rules generated from its config (%s); run `go test -tags e2e ./deploy/deploytest -run 'PrometheusRule|HelmChart' -update`", what, firstDifference(got, want))
	}
}

// firstDifference names the first group or rule where got and want differ.
func firstDifference(got, want []rules.RuleGroup) string {
	for i := range min(len(got), len(want)) {
		g, w := got[i], want[i]
		if g.Name != w.Name || g.Interval != w.Interval {
			return fmt.Sprintf("group %d is %q, want %q", i, g.Name, w.Name)
		}
		for j := range min(len(g.Rules), len(w.Rules)) {
			if !reflect.DeepEqual(g.Rules[j], w.Rules[j]) {
				return fmt.Sprintf("group %s rule %d is %s%s, want %s%s", g.Name, j, g.Rules[j].Record, g.Rules[j].Alert, w.Rules[j].Record, w.Rules[j].Alert)
			}
		}
		if len(g.Rules) != len(w.Rules) {
			return fmt.Sprintf("group %s has %d rules, want %d", g.Name, len(g.Rules), len(w.Rules))
		}
	}
	return fmt.Sprintf("%d groups, want %d", len(got), len(want))
}

func TestPrometheusRuleManifests(t *testing.T) {
	for _, mode := range []string{"sidecar", "central"} {
		t.Run(mode, func(t *testing.T) {
			dir := filepath.Join(kubeDir, mode)
			_, files := readKustomization(t, dir)
			m := decodeFiles(t, files...)
			cfg, errs := checkProber(m, m.deployments[0], t.TempDir())
			if cfg == nil {
				t.Fatal(errs)
			}
			source := filepath.Join("deploy/kubernetes", mode, "configmap.yaml")
			compareRules(t, m, cfg, source, func(groups []rules.RuleGroup) error {
				return writeRuleManifest(filepath.Join(dir, "prometheusrule.yaml"), "vllm-prober", source, groups)
			})
		})
	}
}
