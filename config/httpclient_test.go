package config

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/vllm-prober/vllm-prober/internal/testfile"
)

// redirectConfig is a config whose target url is base, with extra lines
// under its http_client_config.
func redirectConfig(t *testing.T, base, extra string) *Config {
	t.Helper()
	dir := t.TempDir()
	testfile.Write(t, dir, "token", "s3cret")
	cfg, err := Parse(fmt.Appendf(nil, `targets:
  - name: t
    url: %s
    http_client_config:
      authorization: {credentials_file: token}
%s
probes:
  - name: p
    api: completions
    rate: 1
    workload: {prompts: [{prompt: hi}]}
`, base, extra), filepath.Join(dir, "c.yml"))
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// TestRedirects checks that redirects are followed only when
// follow_redirects is true, only to the same origin, and that the
// Authorization header never reaches another port.
func TestRedirects(t *testing.T) {
	var elsewhereAuth, elsewhereHits int
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		elsewhereHits++
		if r.Header.Get("Authorization") != "" {
			elsewhereAuth++
		}
	}))
	defer elsewhere.Close()
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/same":
			http.Redirect(w, r, "/final", http.StatusFound)
		case "/other":
			http.Redirect(w, r, elsewhere.URL+"/final", http.StatusTemporaryRedirect)
		case "/final":
			if r.Header.Get("Authorization") != "Bearer s3cret" {
				w.WriteHeader(http.StatusUnauthorized)
			}
		}
	}))
	defer origin.Close()

	tests := []struct {
		name, extra, path string
		want              int
	}{
		{"absent key: not followed", "", "/same", http.StatusFound},
		{"false: not followed", "      follow_redirects: false", "/same", http.StatusFound},
		{"true: same origin followed", "      follow_redirects: true", "/same", http.StatusOK},
		{"true: other port not followed", "      follow_redirects: true", "/other", http.StatusTemporaryRedirect},
		{"absent key: other port not followed", "", "/other", http.StatusTemporaryRedirect},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := redirectConfig(t, origin.URL, tc.extra)
			c, err := NewHTTPClient(cfg.Targets[0].HTTPClientConfig, "test")
			if err != nil {
				t.Fatal(err)
			}
			defer c.CloseIdleConnections()
			resp, err := c.Get(origin.URL + tc.path)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tc.want {
				t.Errorf("status %d, want %d", resp.StatusCode, tc.want)
			}
		})
	}
	if elsewhereHits != 0 || elsewhereAuth != 0 {
		t.Errorf("the other port got %d requests, %d with Authorization", elsewhereHits, elsewhereAuth)
	}
}

func TestFollowRedirectsDefault(t *testing.T) {
	if DefaultTarget.HTTPClientConfig.FollowRedirects {
		t.Error("a target without http_client_config follows redirects")
	}
	cfg := redirectConfig(t, "http://127.0.0.1:1", "")
	if cfg.Targets[0].HTTPClientConfig.FollowRedirects {
		t.Error("http_client_config without follow_redirects follows redirects")
	}
	cfg = redirectConfig(t, "http://127.0.0.1:1", "      follow_redirects: true")
	if !cfg.Targets[0].HTTPClientConfig.FollowRedirects {
		t.Error("follow_redirects: true is lost")
	}
}
