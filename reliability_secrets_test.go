package main

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/vllm-prober/vllm-prober/internal/daemontest"
	"github.com/vllm-prober/vllm-prober/internal/testfile"
	"github.com/vllm-prober/vllm-prober/simulator"
)

// Recognisable secrets that must never be shown anywhere.
const (
	relToken    = "sk-RELIABILITY-7d3f9e21c4b8"
	relPassword = "pw-RELIABILITY-b1a2c3d4"
	relURLPass  = "urlpw-RELIABILITY-99aa"
)

// relSecretForms are the secrets and the encodings a leak could take.
func relSecretForms() []string {
	return []string{
		relToken, relPassword, relURLPass,
		base64.StdEncoding.EncodeToString([]byte("alice:" + relPassword)),
	}
}

// relStartSim runs a simulator that requires apiKey.
func relStartSim(t *testing.T, apiKey string) string {
	t.Helper()
	return startSimulator(t, func(o *simulator.Options) { o.Seed, o.APIKey = 3, apiKey })
}

// relSecretsConfig has a target authenticated with a bearer token file
// (accepted), one with a basic-auth password file (refused with 401, so
// failures and their error texts exist), both scraped.
func relSecretsConfig(simURL, tokenFile, passFile, ledger string) string {
	return fmt.Sprintf(`global:
  ledger: {path: %q, record_text: all}
  server_metrics: {interval: 1s, timeout: 1s}
targets:
  - name: bearer
    url: %s
    http_client_config:
      authorization: {type: Bearer, credentials_file: %s}
  - name: basic
    url: %s
    model: sim-llama
    http_client_config:
      basic_auth: {username: alice, password_file: %s}
probes:
  - name: chat
    api: chat
    rate: 5
    timeout: 5s
    workload:
      prompts:
        - messages: [{role: user, content: "What is 12*12? Digits only."}]
          expect: {regex: '\b144\b'}
`, ledger, simURL, tokenFile, simURL, passFile)
}

// relBadConfigs are invalid configs that hold secrets inline.
func relBadConfigs(simURL string) map[string]string {
	probes := `probes:
  - name: chat
    api: chat
    rate: 1
    workload: {random: {input_tokens: 8, output_tokens: 8}}
`
	return map[string]string{
		"inline bearer with a bad key": fmt.Sprintf(`targets:
  - name: t
    url: %s
    http_client_config:
      authorization: {type: Bearer, credentials: %s}
      no_such_key: 1
`, simURL, relToken) + probes,
		"inline password of the wrong type": `targets:
  - name: t
    url: http://127.0.0.1:1
    http_client_config:
      basic_auth: {username: alice, password: [` + relPassword + `]}
` + probes,
		"credentials in the URL": `targets:
  - name: t
    url: http://alice:` + relURLPass + `@127.0.0.1:1
` + probes,
		"secret as a bad header value": `targets:
  - name: t
    url: http://127.0.0.1:1
    http_client_config:
      authorization: ` + relToken + `
` + probes,
	}
}

// TestSecretsNeverShown runs the daemon at debug level with a bearer token
// and a basic-auth password in files, then greps every output for them:
// /metrics, the status page, /api/v1/results, /probe, the ledger (with
// record_text all), --config.check, failed reloads and the logs.
func TestSecretsNeverShown(t *testing.T) {
	simURL := relStartSim(t, relToken)
	dir := t.TempDir()
	tokenFile := testfile.Write(t, dir, "token", relToken+"\n")
	passFile := testfile.Write(t, dir, "password", relPassword)
	ledger := filepath.Join(dir, "ledger.jsonl")
	cfgPath := testfile.Write(t, dir, "c.yml", relSecretsConfig(simURL, tokenFile, passFile, ledger))
	d := daemontest.Start(t, binary, "--config.file="+cfgPath, "--log.level=debug", "--web.enable-lifecycle")
	waitFor(t, "accepted and refused requests", func() bool {
		_, body := get(t, http.MethodGet, d.URL("/api/v1/results?limit=50"))
		return strings.Contains(body, `"target":"bearer"`) && strings.Contains(body, `"disposition":"accepted"`) &&
			strings.Contains(body, `"reason":"http_4xx"`)
	})

	shown := map[string]string{}
	for _, p := range []string{"/metrics", "/", "/api/v1/results?limit=1000", "/probe?target=bearer&probe=chat", "/probe?target=basic&probe=chat"} {
		_, shown["GET "+p] = get(t, http.MethodGet, d.URL(p))
	}
	code, out := runBinary(t, "--config.file="+cfgPath, "--config.check")
	if code != 0 {
		t.Errorf("--config.check: %d %s", code, out)
	}
	shown["--config.check"] = out
	for name, cfg := range relBadConfigs(simURL) {
		bad := testfile.Write(t, dir, "bad.yml", cfg)
		code, out := runBinary(t, "--config.file="+bad, "--config.check")
		if code != 1 {
			t.Errorf("%s: --config.check exit %d, want 1:\n%s", name, code, out)
		}
		shown["--config.check "+name] = out
		testfile.Write(t, dir, "c.yml", cfg)
		code, body := get(t, http.MethodPost, d.URL("/-/reload"))
		if code != http.StatusInternalServerError {
			t.Errorf("%s: reload %d, want 500: %s", name, code, body)
		}
		shown["reload "+name] = body
	}
	testfile.Write(t, dir, "c.yml", relSecretsConfig(simURL, tokenFile, passFile, ledger))
	stopDaemon(t, d)
	b, err := os.ReadFile(ledger)
	if err != nil || !strings.Contains(string(b), `"text":`) {
		t.Fatalf("ledger with text not written: %v", err)
	}
	shown["ledger"] = string(b)
	shown["logs"] = d.Logs()
	for where, text := range shown {
		for _, secret := range relSecretForms() {
			if strings.Contains(text, secret) {
				t.Errorf("%s shows the secret %q", where, secret)
			}
		}
	}
}

// stopDaemon interrupts the daemon and waits for a zero exit.
func stopDaemon(t *testing.T, d *daemontest.Proc) {
	t.Helper()
	if err := d.Stop(t, os.Interrupt); err != nil {
		t.Fatalf("daemon exit: %v", err)
	}
}

// TestURLSecretsNotEchoed writes a token as a target URL's user name and
// an API key as its query: --config.check and a failed reload's log name
// the problem without showing either.
func TestURLSecretsNotEchoed(t *testing.T) {
	const token, key = "sk-USERINFO-4f2a9c", "QUERYKEY-77b1e0"
	simURL := startSimulator(t)
	dir := t.TempDir()
	cfgPath := writeChatConfig(t, dir, simURL, 2, "")
	d := startDaemon(t, "--config.file="+cfgPath, "--log.level=debug")

	bad := strings.Replace(simURL, "http://", "http://"+token+"@", 1) + "/?api_key=" + key
	writeConfig(t, cfgPath, bad, 2, "")
	code, out := runBinary(t, "--config.file="+cfgPath, "--config.check")
	if code != 1 || !strings.Contains(out, "targets[0].url: must not contain credentials") {
		t.Errorf("--config.check: exit %d, want 1 naming the URL:\n%s", code, out)
	}
	sighup(t, d)
	waitFor(t, "the reload to fail", func() bool { return strings.Contains(d.Logs(), "Error reloading config") })
	_, status := get(t, http.MethodGet, d.URL("/"))
	for where, text := range map[string]string{"--config.check": out, "logs": d.Logs(), "status page": status} {
		for _, secret := range []string{token, key} {
			if strings.Contains(text, secret) {
				t.Errorf("%s shows %s:\n%s", where, secret, text)
			}
		}
	}
	if !regexp.MustCompile(`http://xxxxx@127\.0\.0\.1:\d+/\?api_key=xxxxx`).MatchString(d.Logs()) {
		t.Errorf("reload error does not show the redacted URL:\n%s", d.Logs())
	}
}

// TestRedirectedURLSecretsNotShown runs the daemon against a server that
// redirects every request to a URL with a token as its user name and a key
// in its query: the ledger, the status page, /api/v1/results and the logs
// show neither, whether or not the redirect is followed.
func TestRedirectedURLSecretsNotShown(t *testing.T) {
	const token, key = "sk-REDIRUSER-81c3", "REDIRQUERY-5d0e"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://"+token+"@127.0.0.1:1/x?key="+key, http.StatusFound)
	}))
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	ledger := filepath.Join(dir, "ledger.jsonl")
	cfgPath := filepath.Join(dir, "c.yml")
	writeConfig(t, cfgPath, srv.URL, 10, ledger)
	d := startDaemon(t, "--config.file="+cfgPath, "--log.level=debug")
	waitFor(t, "failed requests in the ledger and a failed scrape", func() bool {
		b, _ := os.ReadFile(ledger)
		_, page := get(t, http.MethodGet, d.URL("/"))
		return strings.Contains(string(b), `"disposition":"server_failure"`) && strings.Contains(page, "failing")
	})
	shown := map[string]string{}
	_, shown["status page"] = get(t, http.MethodGet, d.URL("/"))
	_, shown["/api/v1/results"] = get(t, http.MethodGet, d.URL("/api/v1/results?limit=1000"))
	stopDaemon(t, d)
	b, err := os.ReadFile(ledger)
	if err != nil {
		t.Fatal(err)
	}
	shown["ledger"], shown["logs"] = string(b), d.Logs()
	for where, text := range shown {
		for _, secret := range []string{token, key} {
			if strings.Contains(text, secret) {
				t.Errorf("%s shows %s:\n%s", where, secret, text)
			}
		}
	}
}
