package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vllm-prober/vllm-prober/config"
	"github.com/vllm-prober/vllm-prober/internal/promtext"
	"github.com/vllm-prober/vllm-prober/probe/ledger"
	"github.com/vllm-prober/vllm-prober/probe/ledger/ledgertest"
	"github.com/vllm-prober/vllm-prober/simulator"
)

// reloadConfig renders the config of one step: "stable" runs "fixed"
// (never changes) and "varying" (its rate changes), "extra" runs "fixed"
// when present.
func reloadConfig(simURL, ledger string, varyingRate float64, withExtra bool) string {
	extra := ""
	if withExtra {
		extra = fmt.Sprintf("  - name: extra\n    url: %s\n    model: sim-llama\n    probes: [fixed]\n", simURL)
	}
	return fmt.Sprintf(`global:
  ledger: {path: %q}
  server_metrics: {interval: 1s, timeout: 1s}
targets:
  - name: stable
    url: %s
    model: sim-llama
%sprobes:
  - name: fixed
    api: chat
    rate: 8
    timeout: 5s
    workload:
      prompts:
        - messages: [{role: user, content: "What is 12*12? Digits only."}]
          expect: {regex: '\b144\b'}
  - name: varying
    api: completions
    rate: %g
    timeout: 5s
    workload: {random: {input_tokens: 16, output_tokens: 4}}
`, ledger, simURL, extra, varyingRate)
}

// reloadStep is what one reload does.
type reloadStep struct {
	kind      string // unchanged, rate, extra, invalid
	rate      float64
	withExtra bool
}

// reloadSteps lists 100 reloads: unchanged rewrites, changed rates, the
// extra target added and removed, and one invalid file.
func reloadSteps() []reloadStep {
	var steps []reloadStep
	rate, extra := 6.0, false
	for i := range 100 {
		s := reloadStep{kind: "unchanged"}
		switch {
		case i == 50:
			s.kind = "invalid"
		case i%7 == 3:
			extra = !extra
			s.kind = "extra"
		case i%3 == 1:
			rate = 4 + float64(i%5)
			s.kind = "rate"
		}
		s.rate, s.withExtra = rate, extra
		steps = append(steps, s)
	}
	return steps
}

// seriesState is what one scrape says about the pairs.
type seriesState struct {
	ttftCount map[string]uint64 // sample count of the TTFT histogram
	targets   map[string]bool   // targets with vllm_probe_* series
	reloadOK  float64
}

func scrapeState(t *testing.T, d *daemon) seriesState {
	t.Helper()
	fams, err := d.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	st := seriesState{ttftCount: map[string]uint64{}, targets: map[string]bool{}}
	for _, f := range fams {
		for _, m := range f.GetMetric() {
			l := promtext.Labels(m)
			target, probeName := l["target"], l["probe"]
			if strings.HasPrefix(f.GetName(), "vllm_probe_") && probeName != "" {
				st.targets[target] = true
			}
			if f.GetName() == "vllm_probe_time_to_first_token_seconds" {
				st.ttftCount[target+"/"+probeName] = m.GetHistogram().GetSampleCount()
			}
			if f.GetName() == "vllm_prober_config_last_reload_successful" {
				st.reloadOK = m.GetGauge().GetValue()
			}
		}
	}
	return st
}

// TestReloadUnderLoad runs the daemon in-process at about 20 requests/s
// and reloads it 100 times: unchanged probes keep their histograms, the
// removed target's series disappear once its last requests ended, the invalid file keeps the running
// config, and no request is lost or counted twice.
func TestReloadUnderLoad(t *testing.T) {
	simURL := relSim(t, simulator.Faults{})
	dir := t.TempDir()
	cfgPath, ledger := filepath.Join(dir, "c.yml"), filepath.Join(dir, "ledger.jsonl")
	write := func(s reloadStep) {
		body := reloadConfig(simURL, ledger, s.rate, s.withExtra)
		if s.kind == "invalid" {
			body = strings.Replace(body, "rate: 8", "rate: -8", 1)
		}
		if err := os.WriteFile(cfgPath, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(reloadStep{rate: 6})
	d := startInProcess(t, cfgPath)

	prev := scrapeState(t, d)
	for i, s := range reloadSteps() {
		time.Sleep(120 * time.Millisecond)
		write(s)
		running := d.safe.Get()
		err := d.reload()
		cur := scrapeState(t, d)
		// A removed pair's series go once its requests in flight have
		// ended and been counted (docs/design.md, Pair lifecycle).
		for deadline := time.Now().Add(10 * time.Second); cur.targets["extra"] && !s.withExtra && time.Now().Before(deadline); {
			time.Sleep(20 * time.Millisecond)
			cur = scrapeState(t, d)
		}
		checkReloadStep(t, i, s, err, running, d, prev, cur)
		prev = cur
	}
	d.shutdown()
	d.closeLedger()
	checkReloadLedger(t, d, ledger)
}

func checkReloadStep(t *testing.T, i int, s reloadStep, err error, running *config.Config, d *daemon, prev, cur seriesState) {
	t.Helper()
	if s.kind == "invalid" {
		if err == nil || d.safe.Get() != running || cur.reloadOK != 0 {
			t.Errorf("step %d: invalid reload: err %v, config kept %v, reload gauge %g", i, err, d.safe.Get() == running, cur.reloadOK)
		}
	} else if err != nil || cur.reloadOK != 1 {
		t.Errorf("step %d (%s): reload: %v, gauge %g", i, s.kind, err, cur.reloadOK)
	}
	for _, key := range []string{"stable/fixed", "extra/fixed"} {
		if cur.ttftCount[key] < prev.ttftCount[key] && (key != "extra/fixed" || s.kind != "extra") {
			t.Errorf("step %d (%s): %s TTFT sample count went from %d to %d", i, s.kind, key, prev.ttftCount[key], cur.ttftCount[key])
		}
	}
	if cur.targets["extra"] != s.withExtra {
		t.Errorf("step %d (%s): extra target configured %v, has series %v", i, s.kind, s.withExtra, cur.targets["extra"])
	}
	for _, ps := range d.tracker.Snapshot() {
		if ps.InFlight < 0 {
			t.Errorf("step %d: status page shows %d in flight for %s/%s", i, ps.InFlight, ps.Target, ps.Probe)
		}
	}
}

// checkReloadLedger: per pair the ledger seqs are 1..n, and for the pairs
// never removed the counters equal the ledger per disposition.
func checkReloadLedger(t *testing.T, d *daemon, ledgerPath string) {
	t.Helper()
	recs, seqs := readLedgerSeqs(t, ledgerPath)
	byDisp := map[string]float64{}
	for _, r := range recs {
		byDisp[r.Target+"/"+r.Probe+" "+string(r.Disposition)]++
	}
	fams, err := d.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() != "vllm_probe_requests_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			l := promtext.Labels(m)
			key := l["target"] + "/" + l["probe"] + " " + l["disposition"]
			if strings.HasPrefix(key, "stable/") && m.GetCounter().GetValue() != byDisp[key] {
				t.Errorf("%s: counter %g, ledger %g", key, m.GetCounter().GetValue(), byDisp[key])
			}
		}
	}
	if len(seqs["stable/fixed"]) < 80 || len(seqs["extra/fixed"]) == 0 {
		t.Errorf("too few requests: %d stable/fixed, %d extra/fixed", len(seqs["stable/fixed"]), len(seqs["extra/fixed"]))
	}
}

// readLedgerSeqs reads the ledger at path, checks that every pair's seqs
// are 1..n, and returns the records and the seqs by pair
// (config.PairKey.String).
func readLedgerSeqs(t *testing.T, path string) ([]ledger.Record, map[string][]uint64) {
	t.Helper()
	recs := ledgertest.Read(t, path)
	seqs := map[string][]uint64{}
	for _, r := range recs {
		key := config.PairKey{Target: r.Target, Probe: r.Probe, Replica: r.Replica}.String()
		seqs[key] = append(seqs[key], r.Seq)
	}
	for key, s := range seqs {
		slices.Sort(s)
		for i, v := range s {
			if v != uint64(i+1) {
				t.Errorf("%s: ledger seqs are not 1..%d: position %d holds %d", key, len(s), i, v)
				break
			}
		}
	}
	return recs, seqs
}
