package main

import (
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/vllm-prober/vllm-prober/simulator"
)

// TestPairPage: the detail page of a running pair shows its charts with
// drawn lines, its recent requests with HTTP phases and the server's own
// TTFT, and refuses what names no pair.
func TestPairPage(t *testing.T) {
	simURL := startSimulator(t, func(o *simulator.Options) { o.PerRequestMetrics = true })
	cfgPath := filepath.Join(t.TempDir(), "c.yml")
	writeConfig(t, cfgPath, simURL, 10, "")
	d := startDaemon(t, "--config.file="+cfgPath)
	var page string
	waitFor(t, "accepted requests on the pair page", func() bool {
		_, page = get(t, http.MethodGet, d.URL("/pair?target=sim&probe=chat"))
		return strings.Count(page, "<td class=\"l\">accepted</td>") >= 3
	})
	for _, want := range []string{"<h1>sim / chat</h1>", `<path class="series" d="M`, `viewBox="0 0 560 220"`,
		"<th>headers</th>", "<th>server TTFT</th>", "server metrics scrape", "objective 99.00%"} {
		if !strings.Contains(page, want) {
			t.Errorf("pair page lacks %q", want)
		}
	}
	// Server TTFT is shown for the simulator's per-request metrics: a row
	// whose server TTFT cell holds a time.
	if !regexp.MustCompile(`class="server-ttft">\d`).MatchString(page) {
		t.Error("no recent request shows a server TTFT")
	}
	// The server's TTFT over the same window, from the scraped histogram
	// (scraped every second): two scrapes around probe requests.
	waitFor(t, "the server's TTFT on the pair page", func() bool {
		_, page = get(t, http.MethodGet, d.URL("/pair?target=sim&probe=chat"))
		return regexp.MustCompile(`server \(model sim-llama, all clients\)</td><td>[1-9]\d*</td><td class="server-ttft-p50">\d`).MatchString(page)
	})
	if code, status := get(t, http.MethodGet, d.URL("/")); code != 200 || !strings.Contains(status, `href="pair?probe=chat&amp;target=sim"`) {
		t.Errorf("status page (%d) does not link the pair page", code)
	}
	for _, c := range []struct{ path, want string }{
		{"/pair", "target and probe parameters are required"},
		{"/pair?target=sim", "target and probe parameters are required"},
		{"/pair?target=nope&probe=chat", `unknown target "nope"`},
		{"/pair?target=sim&probe=nope", `unknown probe "nope"`},
		// A static target has no replicas: a 400, as /probe answers, not
		// a 503 "not running" that would suggest waiting.
		{"/pair?target=sim&probe=chat&replica=127.0.0.1:1", `target "sim" has no discovery, so no replicas`},
	} {
		if code, body := get(t, http.MethodGet, d.URL(c.path)); code != http.StatusBadRequest || !strings.Contains(body, c.want) {
			t.Errorf("GET %s: %d %q, want 400 %q", c.path, code, body, c.want)
		}
	}
}
