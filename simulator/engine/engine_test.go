package engine

import (
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestStepStart checks where a step's clock starts.
func TestStepStart(t *testing.T) {
	now := time.Now()
	queued := func(offsets ...time.Duration) step {
		var st step
		for _, o := range offsets {
			s := &Seq{}
			s.timing.Queued = now.Add(o)
			st.seqs = append(st.seqs, s)
		}
		return st
	}
	cases := []struct {
		name string
		st   step
		next time.Time
		want time.Time
	}{
		{"idle starts at the newest queue time", queued(-3*time.Millisecond, -time.Millisecond), time.Time{}, now.Add(-time.Millisecond)},
		{"busy starts at the previous deadline", queued(-time.Millisecond), now.Add(-200 * time.Microsecond), now.Add(-200 * time.Microsecond)},
		{"far behind resyncs to now", queued(-time.Second), now.Add(-time.Second), now},
		{"queue time in the future is clamped", queued(time.Millisecond), time.Time{}, now},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := stepStart(tc.st, tc.next, now); !got.Equal(tc.want) {
				t.Errorf("start %s after now, want %s", got.Sub(now), tc.want.Sub(now))
			}
		})
	}
}

// TestOutputs runs one sequence through a real engine and checks its
// outputs against a hand count: the first token alone, then
// StreamInterval tokens per output, the rest at the finish, and the
// token counters of the engine's series.
func TestOutputs(t *testing.T) {
	c := Config{MaxNumSeqs: 4, StreamInterval: 2, KVCacheTokens: 1024, DecodeBase: time.Millisecond}
	met := NewMetrics(prometheus.NewRegistry(), "m", 1024, c)
	e := New(c, 1, met)
	go e.Run()
	defer e.Close()

	tests := []struct {
		finish             string
		wantText           []string
		wantTokens, totals []int
	}{
		// EOS has no text, so a "stop" sequence's last output carries none
		// of its own token's text.
		{"stop", []string{"t0", "t1t2", "t3"}, []int{1, 2, 2}, []int{1, 3, 5}},
		{"length", []string{"t0", "t1t2", "t3t4"}, []int{1, 2, 2}, []int{1, 3, 5}},
	}
	for _, tc := range tests {
		t.Run(tc.finish, func(t *testing.T) {
			s := &Seq{PromptIDs: []int{1, 2, 3}, MaxTokens: 5, Target: 5, FinishReason: tc.finish,
				Text: func(i int) string { return fmt.Sprintf("t%d", i) }, Sink: NewSink(), Arrival: time.Now()}
			e.Submit(s)
			var outs []Output
			for len(outs) == 0 || outs[len(outs)-1].Finish == "" {
				select {
				case <-s.Sink.Notify():
				case <-time.After(10 * time.Second):
					t.Fatalf("no finish after %d outputs", len(outs))
				}
				outs = append(outs, s.Sink.Take()...)
			}
			if len(outs) != len(tc.wantText) {
				t.Fatalf("%d outputs, want %d: %+v", len(outs), len(tc.wantText), outs)
			}
			for i, o := range outs {
				if o.Text != tc.wantText[i] || o.Tokens != tc.wantTokens[i] || o.Total != tc.totals[i] {
					t.Errorf("output %d: text %q tokens %d total %d, want %q %d %d",
						i, o.Text, o.Tokens, o.Total, tc.wantText[i], tc.wantTokens[i], tc.totals[i])
				}
			}
			last := outs[len(outs)-1]
			if last.Finish != tc.finish || last.Timing.FirstToken.IsZero() || last.Timing.LastToken.Before(last.Timing.FirstToken) {
				t.Errorf("last output finish %q timing %+v", last.Finish, last.Timing)
			}
		})
	}
	if got := testutil.ToFloat64(met.generationTokens); got != 10 {
		t.Errorf("vllm:generation_tokens_total %g, want 10", got)
	}
	if got := testutil.ToFloat64(met.promptTokens); got != 6 {
		t.Errorf("vllm:prompt_tokens_total %g, want 6", got)
	}
}
