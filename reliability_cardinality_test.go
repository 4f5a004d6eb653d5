package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/vllm-prober/vllm-prober/internal/testfile"
)

// TestServerSeriesCapFlag: --server-metrics.max-series-per-target caps what
// a target with 50k series adds to our /metrics, and a cap below 1 is
// refused.
func TestServerSeriesCapFlag(t *testing.T) {
	var page strings.Builder
	page.WriteString("# TYPE vllm:num_requests_running gauge\n")
	for i := range 50000 {
		fmt.Fprintf(&page, "vllm:num_requests_running{engine=\"%d\"} 1\n", i)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/metrics" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		_, _ = w.Write([]byte(page.String()))
	}))
	defer srv.Close()
	cfg := fmt.Sprintf(`global:
  server_metrics: {interval: 1s, timeout: 1s}
targets:
  - name: big
    url: %s
    model: m
probes:
  - name: chat
    api: chat
    rate: 0.01
    workload: {random: {input_tokens: 8, output_tokens: 8}}
`, srv.URL)
	cfgPath := testfile.Temp(t, "c.yml", cfg)
	d := startDaemon(t, "--config.file="+cfgPath, "--server-metrics.max-series-per-target=100")
	dropped := regexp.MustCompile(`(?m)^vllm_prober_server_series_dropped_total\{reason="limit",target="big"\} 49900$`)
	var body string
	waitFor(t, "a capped scrape", func() bool {
		_, body = get(t, http.MethodGet, d.URL("/metrics"))
		return dropped.MatchString(body)
	})
	if n := len(regexp.MustCompile(`(?m)^vllm:num_requests_running\{`).FindAllString(body, -1)); n != 100 {
		t.Errorf("%d server series re-exported, want 100", n)
	}

	code, out := runBinary(t, "--config.file="+cfgPath, "--server-metrics.max-series-per-target=0")
	if code != 2 || !strings.Contains(out, "max-series-per-target") {
		t.Errorf("cap 0: exit %d, want 2:\n%s", code, out)
	}
}
