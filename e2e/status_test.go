//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vllm-prober/vllm-prober/internal/daemontest"
	"github.com/vllm-prober/vllm-prober/simulator"
	"github.com/vllm-prober/vllm-prober/simulator/simtest"
)

// secretToken is a recognisable credential that must never be shown.
const secretToken = "sk-e2e-SECRET-5f1c9a7d"

// chromiumDOM loads url in headless Chromium and returns the rendered DOM;
// when shot is not empty it also saves a screenshot there.
func chromiumDOM(t *testing.T, url, shot string) string {
	t.Helper()
	bin := requireTool(t, "chromium")
	args := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir=" + t.TempDir(), "--window-size=1500,1000"}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, append(args, "--dump-dom", url)...).Output()
	if err != nil {
		t.Fatalf("chromium --dump-dom: %v", err)
	}
	if shot != "" {
		if b, err := exec.CommandContext(ctx, bin, append(args, "--screenshot="+shot, url)...).CombinedOutput(); err != nil {
			t.Fatalf("chromium --screenshot: %v\n%s", err, b)
		}
	}
	return string(out)
}

func TestStatusPageInChromium(t *testing.T) {
	o := simulator.DefaultOptions()
	o.APIKey = secretToken
	_, simURL := simtest.Start(t, o)
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "api-key")
	if err := os.WriteFile(keyFile, []byte(secretToken), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := fmt.Sprintf(`targets:
  - name: secured
    url: %s
    http_client_config:
      authorization: {type: Bearer, credentials_file: %s}
probes:
  - name: chat-arith
    api: chat
    rate: 5
    workload:
      prompts:
        - messages: [{role: user, content: "What is 12*12? Digits only."}]
          expect: {regex: '\b144\b'}
  - name: completions-random
    api: completions
    rate: 5
    workload: {random: {input_tokens: 32, output_tokens: 8}}
`, simURL, keyFile)
	cfgPath := filepath.Join(dir, "c.yml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	d := daemontest.Start(t, binary, "--config.file="+cfgPath, "--log.level=debug")
	daemontest.WaitFor(t, 20*time.Second, "accepted requests on the status page", func() bool {
		_, body := daemontest.Do(t, http.MethodGet, d.URL("/api/v1/results?limit=5"))
		return strings.Contains(body, `"disposition":"accepted"`)
	})

	shot := os.Getenv("STATUS_SCREENSHOT") // set to keep a screenshot for review
	dom := chromiumDOM(t, d.URL("/"), shot)
	for _, want := range []string{"vllm-prober", `data-target="secured"`, `data-probe="chat-arith"`, `data-probe="completions-random"`, "goodput", "completed (req/s)", "in flight", "offered − abandoned", "TTFT p99", "Last failures"} {
		if !strings.Contains(dom, want) {
			t.Errorf("status page lacks %q", want)
		}
	}
	for name, body := range map[string]string{
		"status page": dom,
		"metrics":     get(t, d.URL("/metrics")),
		"results":     get(t, d.URL("/api/v1/results?limit=1000")),
		"logs":        d.Logs(),
	} {
		if strings.Contains(body, secretToken) {
			t.Errorf("%s shows the secret token", name)
		}
	}
}

func get(t *testing.T, url string) string {
	t.Helper()
	_, body := daemontest.Do(t, http.MethodGet, url)
	return body
}
