package engine

import (
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// TestAdmission checks max-num-seqs on the engine's own clock: steps run
// one after another without Run's sleeps, so the queue times are the
// model's, not the machine's. Eight requests queued together all start at
// once with eight slots; with two they start in pairs, each pair when the
// previous one has finished its 5 tokens (a 5 ms prefill step with the
// first token, then 4 decode steps of 5 ms).
func TestAdmission(t *testing.T) {
	tests := []struct {
		maxNumSeqs int
		want       []time.Duration
	}{
		{8, make([]time.Duration, 8)},
		{2, []time.Duration{0, 0, 25 * time.Millisecond, 25 * time.Millisecond,
			50 * time.Millisecond, 50 * time.Millisecond, 75 * time.Millisecond, 75 * time.Millisecond}},
	}
	for _, tc := range tests {
		c := Config{MaxNumSeqs: tc.maxNumSeqs, StreamInterval: 1, KVCacheTokens: 1024,
			PrefillBase: 5 * time.Millisecond, DecodeBase: 5 * time.Millisecond}
		e := New(c, 1, NewMetrics(prometheus.NewRegistry(), "m", 1024, c))
		t0 := time.Unix(1000, 0)
		seqs := make([]*Seq, 8)
		for i := range seqs {
			seqs[i] = &Seq{PromptIDs: []int{i, 1, 2, 3}, MaxTokens: 5, Target: 5, FinishReason: "length",
				Text: func(int) string { return "t" }, Sink: NewSink(), Arrival: t0}
		}
		e.Submit(seqs...)
		for _, s := range seqs {
			s.timing.Queued = t0
		}
		clock := t0
		for st := e.plan(); len(st.seqs) > 0; st = e.plan() {
			e.markScheduled(st, clock)
			clock = clock.Add(e.duration(st))
			e.complete(st, clock)
		}
		got := make([]time.Duration, len(seqs))
		for i, s := range seqs {
			outs := s.Sink.Take()
			if len(outs) != 5 || outs[4].Finish != "length" {
				t.Fatalf("max-num-seqs %d: request %d ended with %d outputs %+v, want 5 ending length", tc.maxNumSeqs, i, len(outs), outs)
			}
			tm := outs[4].Timing
			got[i] = tm.Scheduled.Sub(tm.Queued)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("max-num-seqs %d: queue times %v, want %v", tc.maxNumSeqs, got, tc.want)
		}
	}
}
