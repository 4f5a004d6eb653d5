package quantile

import (
	"math"
	"strconv"
	"testing"
)

func TestNearestRank(t *testing.T) {
	hundred := make([]int, 100)
	for i := range hundred {
		hundred[i] = i + 1
	}
	tests := []struct {
		name   string
		sorted []int
		q      float64
		want   int
	}{
		{"empty", nil, 0.5, 0},
		{"one", []int{7}, 0.99, 7},
		{"median of four", []int{1, 2, 3, 4}, 0.5, 2},
		{"p99 of four", []int{1, 2, 3, 4}, 0.99, 4},
		{"p50 of hundred", hundred, 0.5, 50},
		{"p99 of hundred", hundred, 0.99, 99},
		{"q 0", hundred, 0, 1},
		{"q 1", hundred, 1, 100},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := NearestRank(tc.sorted, tc.q); got != tc.want {
				t.Errorf("NearestRank(%v) = %v, want %v", tc.q, got, tc.want)
			}
		})
	}
}

// TestLinearInterpolated compares with numpy.quantile([1, 2, 3, 4], q).
func TestLinearInterpolated(t *testing.T) {
	xs := []float64{1, 2, 3, 4}
	tests := []struct{ q, want float64 }{{0.5, 2.5}, {0.99, 3.97}, {1, 4}, {0.25, 1.75}, {0, 1}}
	for _, tc := range tests {
		t.Run(strconv.FormatFloat(tc.q, 'g', -1, 64), func(t *testing.T) {
			if got := LinearInterpolated(xs, tc.q); math.Abs(got-tc.want) > 1e-12 {
				t.Errorf("LinearInterpolated(%v) = %v, want %v", tc.q, got, tc.want)
			}
		})
	}
	if got := LinearInterpolated(nil, 0.5); got != 0 {
		t.Errorf("LinearInterpolated(nil) = %v, want 0", got)
	}
}
