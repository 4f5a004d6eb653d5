package schedule

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vllm-prober/vllm-prober/config"
	"github.com/vllm-prober/vllm-prober/probe"
)

// answerSender answers every request at once with the fingerprint the
// test currently sets, as a fingerprint probe's Requester would.
type answerSender struct{ answer *atomic.Value }

func (s answerSender) Do(_ context.Context, res *probe.Result) {
	res.Sent, res.Disposition = res.Scheduled, probe.Accepted
	res.Fingerprint = &probe.OutputFingerprint{Hash: s.answer.Load().(string)}
}

func (answerSender) Close() {}

// TestEngineFingerprintLifecycle: the engine feeds every result of a
// fingerprint pair to the pair's baselines, which a change of the pair
// that keeps its prompts keeps, and which the pair's removal drops.
func TestEngineFingerprintLifecycle(t *testing.T) {
	var answer atomic.Value
	h := newHarness(t, &senderFactory{}, EngineOptions{})
	h.engine.o.NewRequester = func(config.Target, config.Probe) (Sender, error) { return answerSender{&answer}, nil }
	fp := func(rate float64) config.Probe {
		p := testProbe("fp", rate, 1000)
		p.Workload.Prompts = []config.Prompt{{Prompt: "2+2?"}}
		p.Fingerprint = &config.Fingerprint{Tokens: 16, Confirm: 3}
		return p
	}
	seen := 0
	changes := func(t *testing.T, runs bool) int {
		n := 0
		rs := h.sink.results("t", "fp")
		for _, r := range rs[seen:] {
			if r.Fingerprint == nil {
				t.Fatalf("request %d ended %s/%s without a fingerprint", r.Seq, r.Disposition, r.Reason)
			}
			if r.Fingerprint.Changed {
				n++
			}
		}
		if runs && len(rs)-seen < 10 {
			t.Fatalf("%d requests in the step, want at least 10", len(rs)-seen)
		}
		seen = len(rs)
		return n
	}
	steps := []struct {
		name   string
		cfg    *config.Config
		answer string
		loops  int
		runs   bool // the fingerprint pair runs
		want   int
	}{
		{"baseline", testConfig([]string{"t"}, fp(20)), "A", 1, true, 0},
		{"changed", nil, "B", 1, true, 1},
		{"a rate change keeps the baseline", testConfig([]string{"t"}, fp(30)), "B", 1, true, 0},
		{"and counts a change from it", nil, "A", 1, true, 1},
		{"removed", testConfig([]string{"t"}, testProbe("other", 20, 10)), "A", 1, false, 0},
		{"added again starts afresh", testConfig([]string{"t"}, fp(20), testProbe("other", 20, 10)), "B", 2, true, 0},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			answer.Store(st.answer)
			if st.cfg != nil {
				if err := h.engine.Apply(st.cfg); err != nil {
					t.Fatal(err)
				}
			}
			h.run(t, 2*time.Second, st.loops)
			waitFor(t, "requests to finish", func() bool { return h.engine.inFlight("t", "fp") == 0 })
			if got := changes(t, st.runs); got != st.want {
				t.Errorf("%d changes counted, want %d", got, st.want)
			}
		})
	}
}
