package openloop

import (
	"math"
	"time"

	"github.com/vllm-prober/vllm-prober/probe/schedule"
)

// Schedule returns the planned send offsets, from the start of a run, of n
// requests offered at rate requests per second with gamma shape
// burstiness, drawn the way vLLM's benchmark client draws them: every
// request (the first included) waits a gamma gap of mean 1/rate, the gaps
// are summed into offsets, and the offsets are rescaled so the last one is
// exactly n/rate. An infinite rate sends everything at offset 0; an
// infinite burstiness gives constant gaps of 1/rate. The gaps come from
// schedule.NewArrivals, so the same seed gives the same schedule.
func Schedule(n int, rate, burstiness float64, seed int64) []time.Duration {
	if n <= 0 {
		return nil
	}
	out := make([]time.Duration, n)
	if math.IsInf(rate, 1) || !(rate > 0) {
		return out
	}
	arr := schedule.NewArrivals(rate, burstiness, seed)
	sums := make([]float64, n)
	total := 0.0
	for i := range sums {
		total += arr.Next().Seconds()
		sums[i] = total
	}
	scale := 1.0
	if total > 0 {
		scale = (float64(n) / rate) / total
	}
	for i, s := range sums {
		out[i] = time.Duration(math.Round(s * scale * float64(time.Second)))
	}
	return out
}
