package schedule

import (
	"math"
	"testing"
	"time"
)

// TestEngineReloadsKeepTheRate restarts one pair (its config changes) at
// every step of fake time, many times in a row: its offered count must
// stay within a statistical bound of rate × time, as without reloads.
func TestEngineReloadsKeepTheRate(t *testing.T) {
	const (
		restarts = 400
		step     = 50 * time.Millisecond
	)
	tests := []struct {
		name   string
		rates  [2]float64 // alternated at each reload
		shape  float64
		expect float64 // mean rate
	}{
		{"5/s Poisson", [2]float64{5, 5}, 1, 5},
		{"50/s Poisson", [2]float64{50, 50}, 1, 50},
		{"5/s bursty", [2]float64{5, 5}, 0.5, 5},
		{"rate alternating 4/s and 6/s", [2]float64{4, 6}, 1, 5},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, &senderFactory{}, EngineOptions{})
			for i := range restarts {
				p := testProbe("p", tc.rates[i%2], 8+i%2) // max_in_flight alternates: a changed pair
				p.Burstiness = tc.shape
				if err := h.engine.Apply(testConfig([]string{"t"}, p)); err != nil {
					t.Fatal(err)
				}
				h.run(t, step, 1)
			}
			offered, _ := h.sink.counts("t", "p")
			want := tc.expect * (restarts * step).Seconds()
			// A gamma process of shape k counts with variance about
			// mean/k; 5 standard deviations never fail a seeded run by chance.
			bound := 5 * math.Sqrt(want/tc.shape)
			if math.Abs(float64(offered)-want) > bound {
				t.Errorf("offered %d over %v with %d reloads, want %.0f ± %.0f", offered, restarts*step, restarts, want, bound)
			}
			for i, r := range h.sink.results("t", "p") {
				if r.Seq != uint64(i+1) {
					t.Fatalf("result %d has seq %d", i, r.Seq)
				}
			}
		})
	}
}

func TestResumeAt(t *testing.T) {
	start := testEpoch
	next := start.Add(200 * time.Millisecond)
	tests := []struct {
		name             string
		next             time.Time
		oldMean, newMean float64
		want             time.Time
		ok               bool
	}{
		{"same rate: the pending time", next, 0.5, 0.5, next, true},
		{"double rate: half the wait", next, 0.5, 0.25, start.Add(100 * time.Millisecond), true},
		{"overdue: fires at once, late", start.Add(-time.Second), 0.5, 0.1, start.Add(-time.Second), true},
		{"from rate 0: afresh", next, math.Inf(1), 0.5, time.Time{}, false},
		{"to rate 0: afresh", next, 0.5, math.Inf(1), time.Time{}, false},
	}
	for _, tc := range tests {
		got, ok := resumeAt(start, tc.next, tc.oldMean, tc.newMean)
		if !got.Equal(tc.want) || ok != tc.ok {
			t.Errorf("%s: got %v %v, want %v %v", tc.name, got, ok, tc.want, tc.ok)
		}
	}
}
