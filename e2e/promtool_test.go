//go:build e2e

package e2e

import (
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/vllm-prober/vllm-prober/internal/daemontest"
)

// TestPromtoolCheckMetricsOnDemo runs the demo with faults and checks its
// /metrics output with promtool's linter.
func TestPromtoolCheckMetricsOnDemo(t *testing.T) {
	promtool := daemontest.RequireTool(t, "promtool")
	metricsURL, _, sc := daemontest.StartDemo(t, binary, "--faults", "--duration=60s", "--summary.interval=1s")
	go func() {
		for sc.Scan() {
		}
	}()
	time.Sleep(7 * time.Second) // requests finish and a server scrape happens
	_, body := daemontest.Do(t, http.MethodGet, metricsURL)
	for _, want := range []string{"vllm_probe_requests_total", "vllm:time_to_first_token_seconds_bucket"} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}

	// Our own series must lint clean.
	code, out := promtoolCheck(t, promtool, ownSeries(body))
	if code != 0 {
		t.Errorf("promtool check metrics on vllm-prober's own series: exit %d\n%s", code, out)
	}
	// The whole page must parse; the only lint findings allowed are those
	// vLLM's own names carry (colons, a histogram named *_total), which the
	// re-export must keep unchanged (docs/design.md, "Metrics").
	code, out = promtoolCheck(t, promtool, body)
	if code != 0 && code != 3 {
		t.Fatalf("promtool check metrics on the whole page: exit %d\n%s", code, out)
	}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if line != "" && !strings.HasPrefix(line, "vllm:") {
			t.Errorf("unexpected promtool finding: %s", line)
		}
	}
}

// ownSeries drops the re-exported vllm:* server families from an
// exposition page.
func ownSeries(page string) string {
	var b strings.Builder
	for _, line := range strings.Split(page, "\n") {
		f := strings.Fields(line)
		if strings.HasPrefix(line, "vllm:") || (len(f) > 2 && f[0] == "#" && strings.HasPrefix(f[2], "vllm:")) {
			continue
		}
		b.WriteString(line + "\n")
	}
	return b.String()
}

// promtoolCheck runs `promtool check metrics` on page and returns the exit
// code and the output.
func promtoolCheck(t *testing.T, promtool, page string) (int, string) {
	t.Helper()
	check := exec.Command(promtool, "check", "metrics")
	check.Stdin = strings.NewReader(page)
	code, out, err := daemontest.Output(check)
	if err != nil {
		t.Fatalf("promtool: %v", err)
	}
	return code, out
}
