package quantile

import "math"

// Bucket is one bucket of a cumulative histogram: Count observations at
// or below UpperBound.
type Bucket struct {
	UpperBound float64
	Count      float64
}

// Histogram returns the q-quantile (0 ≤ q ≤ 1) of a cumulative histogram
// the way PromQL's histogram_quantile does for classic buckets: the rank
// q·total is found in its bucket and the value interpolated linearly
// between the bucket's bounds, the first bucket's lower bound being 0
// (when its upper bound is positive); a rank in the +Inf bucket returns
// the highest finite bound. Counts that decrease from one bucket to the
// next (counter resets seen in one bucket but not another) are raised to
// the running maximum, as Prometheus does. buckets must be sorted by
// UpperBound and end with +Inf; ok is false otherwise or when there is no
// observation.
func Histogram(q float64, buckets []Bucket) (v float64, ok bool) {
	n := len(buckets)
	if n < 2 || !math.IsInf(buckets[n-1].UpperBound, 1) || q < 0 || q > 1 {
		return 0, false
	}
	counts := make([]float64, n)
	for i, b := range buckets {
		counts[i] = b.Count
		if i > 0 {
			if b.UpperBound <= buckets[i-1].UpperBound {
				return 0, false
			}
			counts[i] = max(counts[i], counts[i-1])
		}
	}
	total := counts[n-1]
	if total <= 0 {
		return 0, false
	}
	rank := q * total
	i := 0
	for i < n-1 && counts[i] < rank {
		i++
	}
	if i == n-1 {
		return buckets[n-2].UpperBound, true
	}
	lower, below := 0.0, 0.0
	if i > 0 {
		lower, below = buckets[i-1].UpperBound, counts[i-1]
	} else if buckets[0].UpperBound <= 0 {
		return buckets[0].UpperBound, true
	}
	upper := buckets[i].UpperBound
	if counts[i] == below { // q = 0 with an empty first bucket
		return lower, true
	}
	return lower + (upper-lower)*(rank-below)/(counts[i]-below), true
}
