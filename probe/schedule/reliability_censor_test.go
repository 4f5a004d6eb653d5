package schedule_test

import (
	"context"
	"encoding/json"
	"math"
	"testing"
	"time"

	"github.com/vllm-prober/vllm-prober/config"
	"github.com/vllm-prober/vllm-prober/probe"
	"github.com/vllm-prober/vllm-prober/probe/client"
	"github.com/vllm-prober/vllm-prober/probe/ledger"
	"github.com/vllm-prober/vllm-prober/simulator"
)

// TestTimeoutsAreCensored: a request the probe timeout cuts short is
// observed in the E2EL histogram, and in TTFT when no token came, at the
// time it was abandoned (about the timeout); its ledger record keeps only
// what was measured: e2el_s and tpot_s null, ttft_s only when a token came.
func TestTimeoutsAreCensored(t *testing.T) {
	const timeout = 300 * time.Millisecond
	for _, tc := range []struct {
		name      string
		faults    simulator.Faults
		tokenCame bool
	}{
		{"stall mid-stream", simulator.Faults{Stall: 1, StallDuration: 3 * time.Second}, true},
		{"slow headers", simulator.Faults{SlowHeaders: 1, SlowHeadersDelay: 3 * time.Second}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			url := relSim(t, 1, tc.faults)
			p := relChatProbe("chat", 1, timeout)
			p.SLO = config.SLO{TTFT: 200 * 1e6, E2EL: 250 * 1e6} // 200ms, 250ms: below the timeout
			tg := config.Target{Name: "sim", URL: url, Model: "sim-llama"}
			rq, err := client.New(tg, p, client.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer rq.Close()
			res := &probe.Result{Seq: 1, Target: "sim", Probe: "chat", Scheduled: time.Now()}
			rq.Do(context.Background(), res)
			if res.Disposition != probe.ClientTimeout {
				t.Fatalf("disposition %s/%s (%s), want client_timeout", res.Disposition, res.Reason, res.Error)
			}
			// The timeout runs from the start of Do, Elapsed from the send.
			if res.Elapsed < timeout-50*time.Millisecond || res.Elapsed > timeout+200*time.Millisecond {
				t.Errorf("elapsed %v, want about the timeout %v", res.Elapsed, timeout)
			}

			var rec map[string]any
			line, _ := json.Marshal(ledger.NewRecord(res, config.RecordTextNone))
			if err := json.Unmarshal(line, &rec); err != nil {
				t.Fatal(err)
			}
			for _, field := range []string{"e2el_s", "tpot_s"} {
				if v, ok := rec[field]; !ok || v != nil {
					t.Errorf("%s = %v, want null: %s", field, v, line)
				}
			}
			if v := rec["ttft_s"]; (v != nil) != tc.tokenCame {
				t.Errorf("ttft_s = %v, want a value only when a token came (%v): %s", v, tc.tokenCame, line)
			}
			wantFlags := []any{"slo:e2el"}
			if !tc.tokenCame {
				wantFlags = []any{"slo:ttft", "slo:e2el"}
			}
			if got, _ := json.Marshal(rec["flags"]); string(got) != mustJSON(wantFlags) {
				t.Errorf("flags %s, want %s: SLOs are judged at the censored times", got, mustJSON(wantFlags))
			}

			coll, reg := newCollectorRegistry()
			for _, pair := range (&config.Config{Targets: []config.Target{tg}, Probes: []config.Probe{p}}).Pairs() {
				coll.PairStarted(pair)
			}
			coll.Offered(config.PairKey{Target: "sim", Probe: "chat"})
			late := *res // scheduled before this collector's pair existed
			late.Scheduled = time.Time{}
			coll.Finished(&late)
			fams, err := reg.Gather()
			if err != nil {
				t.Fatal(err)
			}
			hist := map[string][2]float64{}
			for _, f := range fams {
				if h := f.GetMetric()[0].GetHistogram(); h != nil && len(f.GetMetric()) == 1 {
					hist[f.GetName()] = [2]float64{float64(h.GetSampleCount()), h.GetSampleSum()}
				}
			}
			e2el := hist["vllm_probe_e2e_request_latency_seconds"]
			if e2el[0] != 1 || math.Abs(e2el[1]-res.Elapsed.Seconds()) > 1e-9 {
				t.Errorf("e2el histogram count %v sum %v, want 1 observation of %v", e2el[0], e2el[1], res.Elapsed)
			}
			ttft, want := hist["vllm_probe_time_to_first_token_seconds"], res.TTFT.Seconds()
			if !tc.tokenCame {
				want = res.Elapsed.Seconds()
			}
			if ttft[0] != 1 || math.Abs(ttft[1]-want) > 1e-9 {
				t.Errorf("ttft histogram count %v sum %v, want 1 observation of %vs", ttft[0], ttft[1], want)
			}
			if tpot := hist["vllm_probe_time_per_output_token_seconds"]; tpot[0] != 0 {
				t.Errorf("tpot histogram has %v observations, want none for a cut stream", tpot[0])
			}
		})
	}
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}
