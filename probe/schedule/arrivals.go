package schedule

import (
	"math"
	"math/rand/v2"
	"time"
)

// maxGap bounds one gap so a degenerate rate never overflows a Duration.
const maxGap = time.Duration(math.MaxInt64 / 4)

// Arrivals draws the gaps between planned send times of one open-loop
// probe: a seeded gamma process with mean gap 1/rate and shape burstiness,
// as vLLM's benchmark client does. Shape 1 is a Poisson process, shapes
// below 1 are burstier, above 1 smoother, and +Inf gives constant gaps.
// An Arrivals is not safe for concurrent use; each loop owns one.
type Arrivals struct {
	mean  float64 // seconds
	shape float64
	rng   *rand.Rand
}

// NewArrivals returns the gap generator for rate requests per second and
// gamma shape burstiness, seeded so the same seed yields the same gaps.
// A rate that is not positive yields gaps too long to ever fire; a shape
// that is not positive (or NaN) is treated as 1 (Poisson).
func NewArrivals(rate, burstiness float64, seed int64) *Arrivals {
	mean := math.Inf(1)
	if rate > 0 && !math.IsInf(rate, 1) {
		mean = 1 / rate
	}
	if !(burstiness > 0) {
		burstiness = 1
	}
	s := uint64(seed)
	return &Arrivals{
		mean:  mean,
		shape: burstiness,
		rng:   rand.New(rand.NewPCG(s, s^0x9e3779b97f4a7c15)),
	}
}

// Next returns the gap between the previous planned send time and the
// next one.
func (a *Arrivals) Next() time.Duration {
	switch {
	case math.IsInf(a.shape, 1):
		return seconds(a.mean)
	case a.shape == 1:
		return seconds(a.rng.ExpFloat64() * a.mean)
	default:
		return seconds(gamma(a.rng, a.shape) * a.mean / a.shape)
	}
}

// first returns the offset of a loop's first planned send from its start:
// a uniform fraction of one mean gap, so probes started together do not
// fire together.
func (a *Arrivals) first() time.Duration {
	return seconds(a.rng.Float64() * a.mean)
}

// seconds converts a gap in seconds to a Duration, saturating at maxGap.
func seconds(s float64) time.Duration {
	if !(s < maxGap.Seconds()) {
		return maxGap
	}
	return time.Duration(s * float64(time.Second))
}

// gamma draws from Gamma(shape, 1) with the Marsaglia–Tsang method
// ("A simple method for generating gamma variables", 2000). Shapes below 1
// draw Gamma(shape+1) and scale it by U^(1/shape).
func gamma(r *rand.Rand, shape float64) float64 {
	if shape < 1 {
		u := r.Float64()
		for u == 0 {
			u = r.Float64()
		}
		return gamma(r, shape+1) * math.Pow(u, 1/shape)
	}
	d := shape - 1.0/3
	c := 1 / math.Sqrt(9*d)
	for {
		x := r.NormFloat64()
		v := 1 + c*x
		if v <= 0 {
			continue
		}
		v = v * v * v
		u := r.Float64()
		x2 := x * x
		if u < 1-0.0331*x2*x2 {
			return d * v
		}
		if u > 0 && math.Log(u) < 0.5*x2+d*(1-v+math.Log(v)) {
			return d * v
		}
	}
}
