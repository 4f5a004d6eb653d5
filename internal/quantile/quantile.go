// Package quantile holds the quantile definitions the prober uses, named
// so that each use says which one it means.
//
//   - NearestRank returns a value that was observed: the status page and
//     the perf harness report it, since an interpolated latency was never
//     seen by any request.
//   - LinearInterpolated is numpy's default (the "linear" method), which
//     `vllm bench serve` reports; bench uses it so its numbers compare
//     with vLLM's.
//   - Histogram is PromQL's histogram_quantile over classic buckets; the
//     /pair page computes the server's TTFT from its scraped histogram
//     with it, as a Prometheus query would.
package quantile

import (
	"cmp"
	"math"
)

// NearestRank returns the q-quantile (0 ≤ q ≤ 1) of sorted by the
// nearest-rank method: the smallest sample with at least a fraction q of
// the samples at or below it. It returns the zero value for no samples.
func NearestRank[T cmp.Ordered](sorted []T, q float64) T {
	var zero T
	if len(sorted) == 0 {
		return zero
	}
	idx := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[min(max(idx, 0), len(sorted)-1)]
}

// LinearInterpolated returns the q-quantile (0 ≤ q ≤ 1) of sorted,
// interpolating linearly between the two nearest ranks (numpy.quantile's
// default method). It returns 0 for no samples.
func LinearInterpolated(sorted []float64, q float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	h := (float64(len(sorted)) - 1) * q
	lo := int(math.Floor(h))
	if lo >= len(sorted)-1 {
		return sorted[len(sorted)-1]
	}
	return sorted[lo] + (h-float64(lo))*(sorted[lo+1]-sorted[lo])
}
