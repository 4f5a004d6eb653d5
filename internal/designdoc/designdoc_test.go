package designdoc

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/vllm-prober/vllm-prober/internal/testfile"
)

func TestMetricNames(t *testing.T) {
	names, err := MetricNames(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"vllm_probe_requests_offered_total", "vllm_probe_requests_total", "vllm_probe_http_phase_seconds",
		"vllm_probe_output_tokens_total", "vllm_prober_ledger_write_errors_total"} {
		if !slices.Contains(names, want) {
			t.Errorf("MetricNames lacks %s: %v", want, names)
		}
	}
	seen := map[string]bool{}
	for _, n := range names {
		if seen[n] || !metricName.MatchString("`"+n+"`") || len(n) < len("vllm_probe_") {
			t.Errorf("bad or repeated name %q", n)
		}
		seen[n] = true
	}
}

func TestMetricNamesWithoutTable(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "docs"), 0o755); err != nil {
		t.Fatal(err)
	}
	doc := "# d\n\n## 8. Metrics\n\nno table\n\n## 9. Other\n\n| `vllm_probe_x` | counter |\n"
	testfile.Write(t, filepath.Join(dir, "docs"), "design.md", doc)
	if names, err := MetricNames(dir); err == nil {
		t.Fatalf("MetricNames = %v, want an error: the Metrics section has no table", names)
	}
}
