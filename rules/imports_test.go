package rules_test

import (
	"go/build"
	"slices"
	"strings"
	"testing"
)

// TestImportsNeitherCollectorNorProbe: rules and rules/promtest (which
// imports rules) read metric names from collector/metricname, a leaf
// package, and depend on neither the collector nor probe (docs/design.md,
// section 2, "Layout").
func TestImportsNeitherCollectorNorProbe(t *testing.T) {
	const module = "github.com/vllm-prober/vllm-prober/"
	seen := map[string]bool{}
	var walk func(path, dir string)
	walk = func(path, dir string) {
		if seen[path] {
			return
		}
		seen[path] = true
		pkg, err := build.Default.Import(path, dir, 0)
		if err != nil {
			t.Fatalf("import %s: %v", path, err)
		}
		for _, imp := range pkg.Imports {
			if strings.HasPrefix(imp, module) {
				walk(imp, pkg.Dir)
			}
		}
	}
	walk(module+"rules/promtest", ".")
	var deps []string
	for p := range seen {
		deps = append(deps, strings.TrimPrefix(p, module))
	}
	slices.Sort(deps)
	if !slices.Contains(deps, "collector/metricname") {
		t.Errorf("rules does not read collector/metricname; dependencies %v", deps)
	}
	for _, d := range deps {
		if d == "collector" || d == "probe" || strings.HasPrefix(d, "probe/") {
			t.Errorf("rules depends on %s; dependencies %v", d, deps)
		}
	}
	mn, err := build.Default.Import(module+"collector/metricname", ".", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(mn.Imports) != 0 {
		t.Errorf("collector/metricname imports %v, want nothing", mn.Imports)
	}
}
