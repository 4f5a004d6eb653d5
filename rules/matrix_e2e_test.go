//go:build e2e

package rules_test

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/vllm-prober/vllm-prober/internal/daemontest"
	"github.com/vllm-prober/vllm-prober/rules"
	"github.com/vllm-prober/vllm-prober/rules/internal/plan"
	"github.com/vllm-prober/vllm-prober/rules/promtest"
)

// TestAlertMatrix runs every scenario of the matrix at every objective
// through `promtool test rules` against the rules Generate makes, and
// checks the times to page, ticket and resolve and the number of pages
// and tickets against each scenario's want (docs/alerts.md, "Alert
// matrix"). Two promtool processes run at a time.
func TestAlertMatrix(t *testing.T) {
	promtool := daemontest.RequireTool(t, "promtool")
	type cell struct {
		sc   matrixScenario
		obj  float64
		want matrixResult
	}
	var cells []cell
	for _, sc := range matrixScenarios {
		rs, err := parseResults(sc.want)
		if err != nil {
			t.Fatalf("%s: %v", sc.name, err)
		}
		for i, obj := range matrixObjectives {
			cells = append(cells, cell{sc, obj, rs[i]})
		}
	}
	sem := make(chan struct{}, 2)
	var wg sync.WaitGroup
	for _, c := range cells {
		want := c.want
		dir := t.TempDir()
		cfg := matrixScenarioConfig(c.sc, c.obj)
		rf, warnings, err := rules.Generate(cfg, rules.Options{})
		if err != nil {
			t.Fatal(err)
		}
		rf = matrixRules(c.sc, rf)
		g, _ := matrixGroup(c.sc, c.obj, want)
		tf := &promtest.File{RuleFiles: []string{"rules.yml"}, EvaluationInterval: plan.FmtDur(c.sc.step), Tests: []promtest.Group{g}}
		writeYAML(t, dir, map[string]any{"rules.yml": rf, "test.yml": tf}, warnings)
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			out, err := exec.Command(promtool, "test", "rules", filepath.Join(dir, "test.yml")).CombinedOutput()
			if err != nil {
				t.Errorf("%s at %g%%: the measured result differs from the table (%s):\n%s", c.sc.name, c.obj*100, fmtResult(want), gotLines(string(out)))
			}
		}()
	}
	wg.Wait()
}

// gotLines keeps promtool's expression, expected and got lines.
func gotLines(out string) string {
	var keep []string
	for _, l := range strings.Split(out, "\n") {
		if l = strings.TrimSpace(l); strings.HasPrefix(l, "expr:") || strings.HasPrefix(l, "exp:") || strings.HasPrefix(l, "got:") || strings.Contains(l, "rror") {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, "\n")
}

func fmtResult(r matrixResult) string {
	return fmt.Sprintf("page %s, ticket %s, resolve %s, pages %d, tickets %d", fmtCell(r.page), fmtCell(r.ticket), fmtCell(r.resolve), r.pages, r.tickets)
}
