package main

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vllm-prober/vllm-prober/internal/daemontest"
	"github.com/vllm-prober/vllm-prober/probe"
	"github.com/vllm-prober/vllm-prober/probe/ledger"
)

// TestRefusedConnectionIsConnect: a target nothing listens on, whose model
// the prober would discover from /v1/models, fails with reason connect, not
// model_discovery, in the ledger, the metrics and on the status page.
func TestRefusedConnectionIsConnect(t *testing.T) {
	closed := "http://" + daemontest.FreeAddr(t)
	dir := t.TempDir()
	cfgPath, ledgerPath := filepath.Join(dir, "c.yml"), filepath.Join(dir, "ledger.jsonl")
	writeConfig(t, cfgPath, closed, 5, ledgerPath) // no model: discovered
	d := startDaemon(t, "--config.file="+cfgPath)

	const connect = `vllm_probe_failures_total{probe="chat",reason="connect",replica="",target="sim"}`
	waitFor(t, "connect failures", func() bool {
		return metricsContain(t, d, connect) && !metricsContain(t, d, connect+" 0")
	})
	if !metricsContain(t, d, `vllm_probe_failures_total{probe="chat",reason="model_discovery",replica="",target="sim"} 0`) {
		t.Error("model_discovery failures counted for a refused connection")
	}
	_, page := get(t, http.MethodGet, d.URL("/"))
	if !strings.Contains(page, `<td class="l">connect</td>`) || strings.Contains(page, "model_discovery") {
		t.Errorf("status page does not show reason connect:\n%s", page)
	}
	stopDaemon(t, d)
	recs, _, err := ledger.Read(ledgerPath)
	if err != nil || len(recs) == 0 {
		t.Fatalf("ledger: %d records, %v", len(recs), err)
	}
	for _, r := range recs {
		if r.Disposition != probe.ServerFailure || r.Reason != probe.ReasonConnect || r.Sent != nil {
			t.Errorf("ledger record %d: %s/%s sent %v, want server_failure/connect, never sent", r.Seq, r.Disposition, r.Reason, r.Sent)
		}
	}
}

// TestProbeEndpointUnpairedPair: /probe with a target and a probe that both
// exist but are not paired (the target's probes list leaves the probe out)
// answers 400 and says so.
func TestProbeEndpointUnpairedPair(t *testing.T) {
	simURL := startSimulator(t)
	cfgPath := filepath.Join(t.TempDir(), "c.yml")
	cfg := fmt.Sprintf(`targets:
  - {name: a, url: %[1]s, probes: [chat]}
  - {name: b, url: %[1]s, probes: [other]}
probes:
  - {name: chat, api: chat, rate: 0.2, workload: {random: {input_tokens: 8, output_tokens: 4}}}
  - {name: other, api: completions, rate: 0.2, workload: {random: {input_tokens: 8, output_tokens: 4}}}
`, simURL)
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	d := startDaemon(t, "--config.file="+cfgPath)
	for _, tc := range []struct {
		query string
		code  int
		body  string
	}{
		{"target=a&probe=chat", 200, `vllm_probe_success{probe="chat",target="a"}`},
		{"target=b&probe=other", 200, `vllm_probe_success{probe="other",target="b"}`},
		{"target=a&probe=other", 400, `probe "other" is not paired with target "a"`},
		{"target=b&probe=chat", 400, `probe "chat" is not paired with target "b"`},
	} {
		t.Run(tc.query, func(t *testing.T) {
			code, body := get(t, http.MethodGet, d.URL("/probe?"+tc.query))
			if code != tc.code || !strings.Contains(body, tc.body) {
				t.Errorf("%d %q, want %d containing %q", code, body, tc.code, tc.body)
			}
		})
	}
}
