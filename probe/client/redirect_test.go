package client

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"testing"

	"github.com/vllm-prober/vllm-prober/config"
	"github.com/vllm-prober/vllm-prober/internal/daemontest"
	"github.com/vllm-prober/vllm-prober/internal/testfile"
	"github.com/vllm-prober/vllm-prober/probe"
)

// TestRequesterRedirects checks that a probe request does not follow a
// redirect unless follow_redirects is true (a server_failure, reason
// redirect), and that its Authorization header never reaches another port.
func TestRequesterRedirects(t *testing.T) {
	srv := daemontest.StartRedirects(t, "/v1/chat/completions", "/final", http.StatusTemporaryRedirect,
		func(w http.ResponseWriter, _ *http.Request) { writeEvents(w, chatOK, true) })
	dir := t.TempDir()
	testfile.Write(t, dir, "token", "s3cret")
	load := func(follow string) config.Target {
		cfg, err := config.Parse(fmt.Appendf(nil, `targets:
  - name: t
    url: %s
    model: m
    http_client_config:
      authorization: {credentials_file: token}
%s
probes: [{name: p, api: completions, rate: 1, workload: {prompts: [{prompt: hi}]}}]
`, srv.Origin.URL, follow), filepath.Join(dir, "c.yml"))
		if err != nil {
			t.Fatal(err)
		}
		return cfg.Targets[0]
	}

	tests := []struct {
		name, follow string
		other        bool
		disp         probe.Disposition
		reason       string
	}{
		{"default: not followed", "", false, probe.ServerFailure, probe.ReasonRedirect},
		{"default: other port not followed", "", true, probe.ServerFailure, probe.ReasonRedirect},
		{"opt-in: same origin followed", "      follow_redirects: true", false, probe.Accepted, ""},
		{"opt-in: other port not followed", "      follow_redirects: true", true, probe.ServerFailure, probe.ReasonRedirect},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv.ToOther.Store(tc.other)
			r := newTestRequester(t, load(tc.follow), rqProbe("chat"), Options{})
			res := doRequest(context.Background(), r, 1)
			if res.Disposition != tc.disp || res.Reason != tc.reason {
				t.Errorf("disposition %s reason %q (%s), want %s %q", res.Disposition, res.Reason, res.Error, tc.disp, tc.reason)
			}
		})
	}
	srv.CheckElsewhereUntouched(t)
}
