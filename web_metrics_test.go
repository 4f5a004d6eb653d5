package main

import (
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/vllm-prober/vllm-prober/internal/daemontest"
)

// TestMetricsGzip: /metrics is gzipped at the fastest level (the gzip
// header's XFL byte is 4) for a client that accepts gzip, plain for one
// that does not, and both parse with the probe series in them.
func TestMetricsGzip(t *testing.T) {
	simURL := startSimulator(t)
	cfgPath := filepath.Join(t.TempDir(), "c.yml")
	writeConfig(t, cfgPath, simURL, 10, "")
	d := startInProcess(t, cfgPath)
	defer d.shutdown()
	srv := httptest.NewServer(d.routes())
	defer srv.Close()
	client := &http.Client{Transport: &http.Transport{DisableCompression: true}}
	for _, tc := range []struct {
		name, accept string
		gzipped      bool
	}{
		{"prometheus", "gzip", true},
		{"with q", "br;q=1.0, gzip;q=0.5, *;q=0.1", true},
		{"refused", "gzip;q=0, identity", false},
		{"none", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequest(http.MethodGet, srv.URL+"/metrics", nil)
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Accept-Encoding", tc.accept)
			resp, raw := daemontest.Send(t, client, req)
			body := string(raw)
			if got := resp.Header.Get("Content-Encoding") == "gzip"; got != tc.gzipped {
				t.Fatalf("Content-Encoding %q, want gzip: %v", resp.Header.Get("Content-Encoding"), tc.gzipped)
			}
			if tc.gzipped {
				if len(raw) < 10 || raw[8] != 4 {
					t.Fatalf("gzip header %x: XFL is not 4 (fastest)", raw[:min(len(raw), 10)])
				}
				zr, err := gzip.NewReader(strings.NewReader(body))
				if err != nil {
					t.Fatal(err)
				}
				plain, err := io.ReadAll(zr)
				if err != nil {
					t.Fatal(err)
				}
				body = string(plain)
			}
			parser := expfmt.NewTextParser(model.UTF8Validation)
			fams, err := parser.TextToMetricFamilies(strings.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			if len(fams["vllm_probe_requests_total"].GetMetric()) == 0 || len(fams["go_goroutines"].GetMetric()) == 0 {
				t.Errorf("/metrics lacks the probe or the registry's families: %d families", len(fams))
			}
		})
	}
}
