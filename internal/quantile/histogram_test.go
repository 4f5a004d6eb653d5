package quantile

import (
	"math"
	"testing"
)

func TestHistogram(t *testing.T) {
	inf := math.Inf(1)
	// Three observations in (0.25, 0.5] and one in (0.5, 0.75].
	ttft := []Bucket{{0.1, 0}, {0.25, 0}, {0.5, 3}, {0.75, 4}, {inf, 4}}
	tests := []struct {
		name    string
		q       float64
		buckets []Bucket
		want    float64
		ok      bool
	}{
		{"median interpolates in its bucket", 0.5, ttft, 0.25 + 0.25*2/3, true},
		{"p99 in the next bucket", 0.99, ttft, 0.5 + 0.25*0.96, true},
		{"first bucket starts at 0", 0.5, []Bucket{{2, 4}, {inf, 4}}, 1, true},
		{"rank in +Inf returns the highest finite bound", 0.99, []Bucket{{1, 1}, {2, 1}, {inf, 2}}, 2, true},
		{"non-monotonic counts take the running maximum", 0.5, []Bucket{{1, 1}, {2, 0}, {3, 4}, {inf, 4}}, 2 + 1.0/3, true},
		{"q = 0 with an empty first bucket", 0, []Bucket{{1, 0}, {2, 2}, {inf, 2}}, 0, true},
		{"no observation", 0.5, []Bucket{{1, 0}, {inf, 0}}, 0, false},
		{"no +Inf bucket", 0.5, []Bucket{{1, 1}, {2, 1}}, 0, false},
		{"unsorted bounds", 0.5, []Bucket{{2, 1}, {1, 1}, {inf, 1}}, 0, false},
		{"q out of range", 1.5, ttft, 0, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := Histogram(tc.q, tc.buckets)
			if ok != tc.ok || math.Abs(got-tc.want) > 1e-12 {
				t.Errorf("Histogram(%v) = %v, %v; want %v, %v", tc.q, got, ok, tc.want, tc.ok)
			}
		})
	}
}
