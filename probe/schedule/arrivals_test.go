package schedule

import (
	"fmt"
	"math"
	"testing"
	"time"
)

// gapStats returns the mean and squared coefficient of variation of n gaps
// in seconds.
func gapStats(a *Arrivals, n int) (mean, cv2 float64) {
	var sum, sumSq float64
	for range n {
		g := a.Next().Seconds()
		sum += g
		sumSq += g * g
	}
	mean = sum / float64(n)
	variance := sumSq/float64(n) - mean*mean
	return mean, variance / (mean * mean)
}

func TestArrivalsGammaMoments(t *testing.T) {
	const n = 200000
	for _, tc := range []struct {
		name        string
		rate, shape float64
	}{
		{"bursty shape 0.25", 2, 0.25},
		{"bursty shape 0.5", 5, 0.5},
		{"poisson", 10, 1},
		{"smooth shape 2", 0.2, 2},
		{"smooth shape 10", 50, 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mean, cv2 := gapStats(NewArrivals(tc.rate, tc.shape, 42), n)
			if want := 1 / tc.rate; math.Abs(mean-want)/want > 0.02 {
				t.Errorf("mean gap %v s, want %v s (rate %v/s)", mean, want, tc.rate)
			}
			if want := 1 / tc.shape; math.Abs(cv2-want)/want > 0.06 {
				t.Errorf("CV^2 %v, want %v", cv2, want)
			}
		})
	}
}

func TestArrivalsPoissonAtShapeOne(t *testing.T) {
	// Exponential gaps: P(gap < x*mean) = 1 - exp(-x) at every x.
	const n = 100000
	a := NewArrivals(4, 1, 7)
	gaps := make([]time.Duration, n)
	for i := range gaps {
		gaps[i] = a.Next()
	}
	for _, x := range []float64{0.1, 0.5, 1, 2, 4} {
		t.Run(fmt.Sprintf("cdf at %g means", x), func(t *testing.T) {
			limit := time.Duration(x * 0.25 * float64(time.Second))
			below := 0
			for _, g := range gaps {
				if g < limit {
					below++
				}
			}
			got, want := float64(below)/n, 1-math.Exp(-x)
			if math.Abs(got-want) > 0.01 {
				t.Errorf("P(gap < %v) = %v, want %v", limit, got, want)
			}
		})
	}
}

func TestArrivalsConstantAtInf(t *testing.T) {
	a := NewArrivals(4, math.Inf(1), 1)
	for i := range 100 {
		if g := a.Next(); g != 250*time.Millisecond {
			t.Fatalf("gap %d = %v, want 250ms", i, g)
		}
	}
}

func TestArrivalsSeeded(t *testing.T) {
	draw := func(seed int64, shape float64) []time.Duration {
		a := NewArrivals(3, shape, seed)
		out := []time.Duration{a.first()}
		for range 50 {
			out = append(out, a.Next())
		}
		return out
	}
	for _, shape := range []float64{0.5, 1, 3} {
		t.Run(fmt.Sprintf("shape=%g", shape), func(t *testing.T) {
			a, b, c := draw(11, shape), draw(11, shape), draw(12, shape)
			same := true
			for i := range a {
				if a[i] != b[i] {
					t.Fatalf("seed 11 run differs at %d: %v vs %v", i, a[i], b[i])
				}
				same = same && a[i] == c[i]
			}
			if same {
				t.Error("seeds 11 and 12 gave the same gaps")
			}
		})
	}
}

func TestArrivalsBadInput(t *testing.T) {
	for _, tc := range []struct {
		name        string
		rate, shape float64
		check       func(time.Duration) bool
	}{
		{"zero rate never fires", 0, 1, func(g time.Duration) bool { return g == maxGap }},
		{"negative rate never fires", -1, 2, func(g time.Duration) bool { return g == maxGap }},
		{"NaN rate never fires", math.NaN(), 0.5, func(g time.Duration) bool { return g == maxGap }},
		{"zero shape is poisson", 10, 0, func(g time.Duration) bool { return g >= 0 && g < maxGap }},
		{"NaN shape is poisson", 10, math.NaN(), func(g time.Duration) bool { return g >= 0 && g < maxGap }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := NewArrivals(tc.rate, tc.shape, 3)
			for range 100 {
				if g := a.Next(); !tc.check(g) {
					t.Fatalf("unexpected gap %v", g)
				}
			}
		})
	}
}

func BenchmarkArrivalsNext(b *testing.B) {
	for _, shape := range []float64{0.5, 1, 2, math.Inf(1)} {
		b.Run(fmt.Sprintf("shape=%g", shape), func(b *testing.B) {
			a := NewArrivals(10, shape, 1)
			for b.Loop() {
				a.Next()
			}
		})
	}
}
