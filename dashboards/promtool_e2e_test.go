//go:build e2e

package dashboards

import (
	"fmt"
	"os/exec"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/vllm-prober/vllm-prober/internal/daemontest"
	"github.com/vllm-prober/vllm-prober/internal/testfile"
)

// TestPromtoolParsesEveryQuery: promtool parses every dashboard query,
// Grafana variables expanded, as the expression of a recording rule,
// so the native-histogram forms beside the classic ones are valid PromQL.
func TestPromtoolParsesEveryQuery(t *testing.T) {
	promtool := daemontest.RequireTool(t, "promtool")
	qs, err := Queries()
	if err != nil {
		t.Fatal(err)
	}
	type rule struct {
		Record string `yaml:"record"`
		Expr   string `yaml:"expr"`
	}
	var rules []rule
	for i, q := range qs {
		rules = append(rules, rule{Record: fmt.Sprintf("dashboard:query:%d", i), Expr: Expand(q.Expr, nil)})
	}
	b, err := yaml.Marshal(map[string]any{"groups": []map[string]any{{"name": "dashboards", "rules": rules}}})
	if err != nil {
		t.Fatal(err)
	}
	file := testfile.Temp(t, "queries.yml", string(b))
	if out, err := exec.Command(promtool, "check", "rules", file).CombinedOutput(); err != nil {
		t.Fatalf("promtool check rules: %v\n%s", err, out)
	}
}
