package openloop

import (
	"math"
	"slices"
	"testing"
	"time"
)

func TestSchedule(t *testing.T) {
	tests := []struct {
		name       string
		n          int
		rate, burn float64
	}{
		{"poisson", 2000, 10, 1},
		{"bursty", 2000, 50, 0.5},
		{"smooth", 2000, 5, 4},
		{"constant", 100, 4, math.Inf(1)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			offs := Schedule(tt.n, tt.rate, tt.burn, 7)
			if len(offs) != tt.n {
				t.Fatalf("len = %d, want %d", len(offs), tt.n)
			}
			want := time.Duration(float64(tt.n) / tt.rate * float64(time.Second))
			if d := offs[len(offs)-1] - want; d < -time.Microsecond || d > time.Microsecond {
				t.Errorf("last offset = %v, want exactly n/rate = %v (vLLM rescaling)", offs[len(offs)-1], want)
			}
			if !slices.IsSorted(offs) || offs[0] <= 0 {
				t.Errorf("offsets not increasing from a first sampled gap: first %v", offs[0])
			}
			if !slices.Equal(offs, Schedule(tt.n, tt.rate, tt.burn, 7)) {
				t.Error("same seed gave a different schedule")
			}
			if slices.Equal(offs, Schedule(tt.n, tt.rate, tt.burn, 8)) && !math.IsInf(tt.burn, 1) {
				t.Error("another seed gave the same schedule")
			}
			// Gaps are gamma(shape=burstiness): coefficient of variation 1/sqrt(shape).
			gaps := make([]float64, len(offs))
			prev := time.Duration(0)
			for i, o := range offs {
				gaps[i], prev = (o - prev).Seconds(), o
			}
			mean, sd := meanSD(gaps)
			if d := math.Abs(mean - 1/tt.rate); d > 1e-9 {
				t.Errorf("mean gap = %v, want 1/rate = %v", mean, 1/tt.rate)
			}
			wantCV := 1 / math.Sqrt(tt.burn)
			if cv := sd / mean; math.Abs(cv-wantCV) > 0.08 {
				t.Errorf("gap CV = %.3f, want %.3f for shape %v", cv, wantCV, tt.burn)
			}
		})
	}
}

func TestScheduleAllAtOnce(t *testing.T) {
	for _, tt := range []struct {
		name string
		n    int
		rate float64
		want int
	}{{"inf rate", 5, math.Inf(1), 5}, {"no requests", 0, 1, 0}} {
		t.Run(tt.name, func(t *testing.T) {
			offs := Schedule(tt.n, tt.rate, 1, 0)
			if len(offs) != tt.want {
				t.Fatalf("len = %d, want %d", len(offs), tt.want)
			}
			for i, o := range offs {
				if o != 0 {
					t.Errorf("offset %d = %v, want 0", i, o)
				}
			}
		})
	}
}

func meanSD(xs []float64) (float64, float64) {
	m := 0.0
	for _, x := range xs {
		m += x
	}
	m /= float64(len(xs))
	v := 0.0
	for _, x := range xs {
		v += (x - m) * (x - m)
	}
	return m, math.Sqrt(v / float64(len(xs)))
}
