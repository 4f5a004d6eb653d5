package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vllm-prober/vllm-prober/collector/metricname"
	"github.com/vllm-prober/vllm-prober/internal/promtext"
	"github.com/vllm-prober/vllm-prober/internal/testfile"
	"github.com/vllm-prober/vllm-prober/probe"
	"github.com/vllm-prober/vllm-prober/probe/ledger"
	"github.com/vllm-prober/vllm-prober/probe/ledger/ledgertest"
	"github.com/vllm-prober/vllm-prober/simulator/simtest"
)

// TestReasoningToolsExampleAgainstSimulator runs
// deploy/examples/reasoning-tools.yml as its comment says, against the
// simulator with 8 reasoning tokens (only the URL, the ledger path and the
// rates changed), and checks by hand count from the ledger that every
// probe's answers pass its checks and carry its feature's fields.
func TestReasoningToolsExampleAgainstSimulator(t *testing.T) {
	_, simURL := startSimulatorServer(t, simtest.Reasoning(8))
	example, err := os.ReadFile(filepath.Join("deploy", "examples", "reasoning-tools.yml"))
	if err != nil {
		t.Fatal(err)
	}
	schema, err := os.ReadFile(filepath.Join("deploy", "examples", "weather.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	testfile.Write(t, dir, "weather.schema.json", string(schema))
	path := filepath.Join(dir, "ledger.jsonl")
	doc := strings.NewReplacer(
		"http://127.0.0.1:8000", simURL,
		"path: ledger.jsonl", fmt.Sprintf("path: %q", path),
		"rate: 0.5", "rate: 3",
	).Replace(string(example))
	d := startInProcess(t, testfile.Write(t, dir, "vllm-prober.yml", doc))
	probes := []string{"chat-reasoning", "chat-tools", "embeddings", "canary", "chat-prefix", "chat-cache-busting"}
	waitFor(t, "6 answers of each probe", func() bool {
		n := countsBy(promtext.Families(t, d.reg)[metricname.Requests], "probe")
		for _, p := range probes {
			if n[p] < 6 {
				return false
			}
		}
		return true
	})
	recs := stopAndReadLedger(t, d, path)
	answered := map[string]int{}
	for _, r := range recs {
		if r.Disposition == probe.Cancelled {
			continue // in flight at shutdown
		}
		// A slow run (the race detector, a busy machine) may miss the
		// example's SLOs; every answer must still pass its checks.
		if r.Disposition != probe.Accepted && r.Disposition != probe.LatencyFailure {
			t.Errorf("%s/%d: %s %s %v, want accepted or latency_failure", r.Probe, r.Seq, r.Disposition, r.Reason, r.Flags)
			continue
		}
		answered[r.Probe]++
		if msg := exampleFeature(r); msg != "" {
			t.Errorf("%s/%d: %s", r.Probe, r.Seq, msg)
		}
	}
	for _, p := range probes {
		if answered[p] < 5 {
			t.Errorf("%s: %d answers passed their checks in the ledger, want at least 5", p, answered[p])
		}
	}
}

// exampleFeature says what an answered record of the example's probe r.Probe
// lacks of its feature, or "".
func exampleFeature(r ledger.Record) string {
	switch r.Probe {
	case "embeddings":
		if r.TTFTS != nil || r.TTFAS != nil || r.E2ELS == nil || r.ReasoningTokens != 0 {
			return fmt.Sprintf("ttft %v, ttfa %v, e2el %v, %d reasoning tokens; want only e2el", r.TTFTS, r.TTFAS, r.E2ELS, r.ReasoningTokens)
		}
		return ""
	case "chat-tools":
		if r.ToolCalls != 1 || r.FinishReason != "tool_calls" {
			return fmt.Sprintf("%d tool calls, finish reason %q; want 1 call of get_weather", r.ToolCalls, r.FinishReason)
		}
	case "canary":
		if len(r.Fingerprint) != 16 {
			return fmt.Sprintf("fingerprint %q, want a 16-digit hash", r.Fingerprint)
		}
	}
	if r.ReasoningTokens != 8 || r.TTFTS == nil || r.TTFAS == nil || *r.TTFAS < *r.TTFTS {
		return fmt.Sprintf("%d reasoning tokens, ttft %v, ttfa %v; want 8, an answer no earlier than the first token (events read together share a time)", r.ReasoningTokens, r.TTFTS, r.TTFAS)
	}
	return ""
}

// stopAndReadLedger shuts an in-process daemon down, closes its ledger and
// reads it at path, which must have no torn line.
func stopAndReadLedger(t *testing.T, d *daemon, path string) []ledger.Record {
	t.Helper()
	d.shutdown()
	d.closeLedger()
	return ledgertest.Read(t, path)
}
