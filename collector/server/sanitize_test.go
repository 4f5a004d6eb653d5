package server

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/vllm-prober/vllm-prober/collector/metricname"
	"github.com/vllm-prober/vllm-prober/config"
	"github.com/vllm-prober/vllm-prober/internal/promtext"
)

func TestServerLabel(t *testing.T) {
	long := strings.Repeat("é", 300) // 600 bytes
	tests := []struct{ in, want string }{
		{"meta-llama/Llama-3.1-8B-Instruct", "meta-llama/Llama-3.1-8B-Instruct"},
		{"a\nb\tc\x1b[31md\x00e\u0085f\u2028g", "a\uFFFDb\uFFFDc\uFFFD[31md\uFFFDe\uFFFDf\uFFFDg"},
		{"bad\xffutf8", "bad\uFFFDutf8"},
		{long, strings.Repeat("é", 126) + "..."},
		{strings.Repeat("x", MaxServerLabelBytes), strings.Repeat("x", MaxServerLabelBytes)},
	}
	for _, tc := range tests {
		if got := serverLabel(tc.in); got != tc.want {
			t.Errorf("serverLabel(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestTargetInfoLabelsSanitised checks the model and server_version labels
// a hostile server sets through /v1/models and /version.
func TestTargetInfoLabelsSanitised(t *testing.T) {
	model := "evil\x1b[2J\r\nmodel\xfe" + strings.Repeat("m", 100_000)
	version := "0.26\x00\x07" + strings.Repeat("v", 5000)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v1/models":
			b, _ := json.Marshal(map[string]any{"data": []map[string]string{{"id": model}}})
			_, _ = w.Write(b)
		case "/version":
			b, _ := json.Marshal(map[string]string{"version": version})
			_, _ = w.Write(b)
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	h := newHarness(t, ScraperOptions{})
	h.Apply(&config.Config{Targets: []config.Target{{Name: "llama", URL: srv.URL}}})
	h.wait(t, "llama")

	found := false
	for _, m := range promtext.Gather(t, h)[metricname.TargetInfo].GetMetric() {
		for _, lp := range m.GetLabel() {
			if lp.GetName() != labelModel && lp.GetName() != labelServerVersion {
				continue
			}
			found = true
			v := lp.GetValue()
			if !utf8.ValidString(v) || len(v) > MaxServerLabelBytes || strings.IndexFunc(v, unicode.IsControl) >= 0 {
				t.Errorf("label %s = %q (%d bytes) is not sanitised", lp.GetName(), v[:min(len(v), 40)], len(v))
			}
			if !strings.HasPrefix(v, "evil") && !strings.HasPrefix(v, "0.26") {
				t.Errorf("label %s = %q lost its text", lp.GetName(), v[:min(len(v), 40)])
			}
		}
	}
	if !found {
		t.Fatal("no vllm_probe_target_info labels")
	}
	if st := h.State("llama", ""); len(st.Model) > MaxServerLabelBytes || len(st.ServerVersion) > MaxServerLabelBytes {
		t.Errorf("status keeps %d and %d bytes", len(st.Model), len(st.ServerVersion))
	}
}
