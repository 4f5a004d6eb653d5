package client

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/vllm-prober/vllm-prober/config"
	"github.com/vllm-prober/vllm-prober/probe"
)

// TestRequesterRedirects checks that a probe request does not follow a
// redirect unless follow_redirects is true (a server_failure, reason
// redirect), and that its Authorization header never reaches another port.
func TestRequesterRedirects(t *testing.T) {
	var leaked, elsewhereHits atomic.Int32
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		elsewhereHits.Add(1)
		if r.Header.Get("Authorization") != "" {
			leaked.Add(1)
		}
		writeEvents(w, chatOK, true)
	}))
	defer elsewhere.Close()
	var toOther atomic.Bool
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/final":
			writeEvents(w, chatOK, true)
		case toOther.Load():
			http.Redirect(w, r, elsewhere.URL+"/final", http.StatusTemporaryRedirect)
		default:
			http.Redirect(w, r, "/final", http.StatusTemporaryRedirect)
		}
	}))
	defer origin.Close()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "token"), []byte("s3cret"), 0o600); err != nil {
		t.Fatal(err)
	}
	load := func(follow string) config.Target {
		cfg, err := config.Parse(fmt.Appendf(nil, `targets:
  - name: t
    url: %s
    model: m
    http_client_config:
      authorization: {credentials_file: token}
%s
probes: [{name: p, api: completions, rate: 1, workload: {prompts: [{prompt: hi}]}}]
`, origin.URL, follow), filepath.Join(dir, "c.yml"))
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
			toOther.Store(tc.other)
			r := newTestRequester(t, load(tc.follow), rqProbe("chat"), Options{})
			res := doRequest(context.Background(), r, 1)
			if res.Disposition != tc.disp || res.Reason != tc.reason {
				t.Errorf("disposition %s reason %q (%s), want %s %q", res.Disposition, res.Reason, res.Error, tc.disp, tc.reason)
			}
		})
	}
	if elsewhereHits.Load() != 0 || leaked.Load() != 0 {
		t.Errorf("the other port got %d requests, %d with Authorization", elsewhereHits.Load(), leaked.Load())
	}
}
