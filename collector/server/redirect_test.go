package server

import (
	"net/http"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	promconfig "github.com/prometheus/common/config"

	"github.com/vllm-prober/vllm-prober/collector/metricname"
	"github.com/vllm-prober/vllm-prober/config"
	"github.com/vllm-prober/vllm-prober/internal/daemontest"
)

// TestServerScraperRedirects checks that a redirected /metrics is not
// exported under the target unless follow_redirects is true, and then only
// from the target's own origin, without credentials leaving it.
func TestServerScraperRedirects(t *testing.T) {
	srv := daemontest.StartRedirects(t, "/metrics", "/real-metrics", http.StatusFound, func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte(sample(t)))
	})

	tests := []struct {
		name          string
		follow, other bool
		success       string
	}{
		{"default: not followed", false, false, "0"},
		{"default: other port not followed", false, true, "0"},
		{"opt-in: same origin followed", true, false, "1"},
		{"opt-in: other port not followed", true, true, "0"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv.ToOther.Store(tc.other)
			target := config.Target{Name: "llama", URL: srv.Origin.URL, Model: "m", MetricsPath: "/metrics",
				HTTPClientConfig: config.DefaultTarget.HTTPClientConfig}
			target.HTTPClientConfig.Authorization = &promconfig.Authorization{Type: "Bearer", Credentials: "s3cret"}
			if tc.follow {
				target.HTTPClientConfig.FollowRedirects = true
			}
			h := newHarness(t, ScraperOptions{})
			h.Apply(&config.Config{Targets: []config.Target{target}})
			h.wait(t, "llama")
			want := successHelpLines + `vllm_probe_server_scrape_success{target="llama"} ` + tc.success + "\n"
			if err := testutil.CollectAndCompare(h, strings.NewReader(want), metricname.ServerScrapeSuccess); err != nil {
				t.Error(err)
			}
			n := testutil.CollectAndCount(h, "vllm:num_requests_running")
			if (n > 0) != (tc.success == "1") {
				t.Errorf("%d server series exported", n)
			}
			if st := h.State("llama", ""); tc.success == "0" && !strings.Contains(st.Err, "302") {
				t.Errorf("scrape error %q does not name the redirect", st.Err)
			}
			h.Stop()
		})
	}
	srv.CheckElsewhereUntouched(t)
}
