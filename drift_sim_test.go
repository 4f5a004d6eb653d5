package main

import (
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/vllm-prober/vllm-prober/collector/metricname"
	"github.com/vllm-prober/vllm-prober/internal/promtext"
	"github.com/vllm-prober/vllm-prober/internal/testfile"
	"github.com/vllm-prober/vllm-prober/probe/ledger/ledgertest"
	"github.com/vllm-prober/vllm-prober/simulator"
)

// driftConfig runs the fingerprint probe "canary" (two prompts) against
// target "drift", and the random probes "warm" (a 64-token shared prefix)
// and "cold" (none) against targets of their own, each its own simulator.
func driftConfig(ledgerPath, driftURL, warmURL, coldURL string) string {
	return fmt.Sprintf(`global:
  ledger: {path: %q}
  server_metrics: {interval: 500ms, timeout: 500ms}
targets:
  - {name: drift, url: %s, probes: [canary]}
  - {name: warm, url: %s, probes: [warm]}
  - {name: cold, url: %s, probes: [cold]}
probes:
  - name: canary
    api: chat
    rate: 12
    burstiness: inf
    timeout: 5s
    request: {max_tokens: 16}
    workload:
      prompts:
        - messages: [{role: user, content: "What is 12*12? Digits only."}]
        - messages: [{role: user, content: "What is 7+8? Digits only."}]
          seed: 3
    fingerprint: {tokens: 8, confirm: 3}
  - name: warm
    api: completions
    rate: 5
    timeout: 5s
    workload: {random: {input_tokens: 32, output_tokens: 4, seed: 1, prefix_tokens: 64}}
  - name: cold
    api: completions
    rate: 5
    timeout: 5s
    workload: {random: {input_tokens: 32, output_tokens: 4, seed: 1}}
`, ledgerPath, driftURL, warmURL, coldURL)
}

// TestDriftAgainstSimulator runs the daemon in-process against the
// simulator. When the simulator's answers change mid-run (POST /sim/faults
// {"output_variant": 1}: every answer's text changes, the same each time),
// the canary counts exactly one change per
// prompt, logs one warning per prompt with both hashes, and its ledger
// holds two hashes per prompt; the prefix probe's prompts hit its
// simulator's prefix cache, the cache-busting probe's do not.
func TestDriftAgainstSimulator(t *testing.T) {
	noJitter := func(o *simulator.Options) { o.Jitter = 0 }
	driftURL, warmURL, coldURL := startSimulator(t, noJitter), startSimulator(t, noJitter), startSimulator(t, noJitter)
	dir := t.TempDir()
	ledgerPath := filepath.Join(dir, "ledger.jsonl")
	cfgPath := testfile.Write(t, dir, "c.yml", driftConfig(ledgerPath, driftURL, warmURL, coldURL))
	logPath := filepath.Join(dir, "daemon.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	d := startInProcessLogged(t, cfgPath, slog.New(slog.NewTextHandler(logFile, nil)))
	defer d.closeLedger()
	defer d.shutdown()

	value := func(name, target, probeName string) float64 {
		var v float64
		for _, m := range promtext.Families(t, d.reg)[name].GetMetric() {
			l := promtext.Labels(m)
			if l["target"] == target && (probeName == "" || l["probe"] == probeName) {
				v += m.GetCounter().GetValue()
			}
		}
		return v
	}
	waitUntil := func(what string, cond func() bool) {
		t.Helper()
		for deadline := time.Now().Add(20 * time.Second); !cond(); time.Sleep(50 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s", what)
			}
		}
	}
	changes := func() float64 { return value(metricname.OutputFingerprintChanges, "drift", "canary") }

	// Both prompts' baselines: six answers each at the least.
	waitUntil("12 canary requests", func() bool { return value(metricname.Requests, "drift", "canary") >= 12 })
	if got := changes(); got != 0 {
		t.Fatalf("%v changes before the answers changed, want 0", got)
	}
	resp, err := http.Post(driftURL+"/sim/faults", "application/json", strings.NewReader(`{"output_variant": 1}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST /sim/faults: %s", resp.Status)
	}
	waitUntil("a change per prompt", func() bool { return changes() >= 2 })
	settled := value(metricname.Requests, "drift", "canary")
	waitUntil("12 more canary requests", func() bool { return value(metricname.Requests, "drift", "canary") >= settled+12 })
	if got := changes(); got != 2 {
		t.Errorf("%v changes counted, want 2: one per prompt", got)
	}
	logs, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	warn := regexp.MustCompile(`level=WARN msg="output fingerprint changed" target=drift probe=canary prompt=(\d) from=([0-9a-f]{16}) to=([0-9a-f]{16})`)
	var prompts []string
	for _, m := range warn.FindAllStringSubmatch(string(logs), -1) {
		prompts = append(prompts, m[1])
		if m[2] == m[3] {
			t.Errorf("change of prompt %s from %s to itself", m[1], m[2])
		}
	}
	if strings.Join(prompts, ",") != "0,1" && strings.Join(prompts, ",") != "1,0" {
		t.Errorf("change warnings for prompts %v, want one for 0 and one for 1:\n%s", prompts, logs)
	}

	// The simulators' prefix caches, as the daemon scrapes them.
	time.Sleep(time.Second)
	warm, cold := value("vllm:prefix_cache_hits_total", "warm", ""), value("vllm:prefix_cache_hits_total", "cold", "")
	if warm < 64 || cold != 0 {
		t.Errorf("prefix cache hits: %v for the prefix probe (want > 64), %v for the cache-busting one (want 0)", warm, cold)
	}

	d.shutdown()
	d.closeLedger()
	recs := ledgertest.Read(t, ledgerPath)
	hashes := map[string]bool{}
	for _, r := range recs {
		if r.Probe == "canary" && r.Fingerprint != "" {
			hashes[r.Fingerprint] = true
		}
		if r.Probe != "canary" && r.Fingerprint != "" {
			t.Errorf("probe %s without fingerprint wrote fingerprint %s", r.Probe, r.Fingerprint)
		}
	}
	if len(hashes) != 4 {
		t.Errorf("the canary's ledger holds %d fingerprints, want 4: two prompts, before and after", len(hashes))
	}
}
