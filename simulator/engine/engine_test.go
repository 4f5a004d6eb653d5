package engine

import (
	"testing"
	"time"
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
