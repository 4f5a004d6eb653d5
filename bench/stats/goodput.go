package stats

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Goodput holds the per-request objectives of vLLM's --goodput. An
// objective counts when it was given (its Has field), whatever its value:
// ttft:0 is an objective no request meets, as in vLLM.
type Goodput struct {
	TTFT, TPOT, E2EL          time.Duration
	HasTTFT, HasTPOT, HasE2EL bool
}

// IsSet reports whether any objective was given.
func (g Goodput) IsSet() bool { return g.HasTTFT || g.HasTPOT || g.HasE2EL }

// Good reports whether a request's measurement meets every objective
// given, as vLLM checks it (objective >= value; TPOT is 0 for one output
// token).
func (g Goodput) Good(ttft, tpot, e2el time.Duration) bool {
	ok := func(has bool, slo, v time.Duration) bool { return !has || v <= slo }
	return ok(g.HasTTFT, g.TTFT, ttft) && ok(g.HasTPOT, g.TPOT, tpot) && ok(g.HasE2EL, g.E2EL, e2el)
}

// Rule returns Good as Options.Good takes it: nil when no objective was given.
func (g Goodput) Rule() func(ttft, tpot, e2el time.Duration) bool {
	if !g.IsSet() {
		return nil
	}
	return g.Good
}

// ParseGoodput parses vLLM's --goodput values: KEY:VALUE pairs separated by
// spaces (or given as several values), keys ttft, tpot or e2el, values in
// milliseconds, not negative. Errors name the pair.
func ParseGoodput(values []string) (Goodput, error) {
	var g Goodput
	for _, v := range values {
		for _, pair := range strings.Fields(v) {
			key, val, ok := strings.Cut(pair, ":")
			ms, err := strconv.ParseFloat(val, 64)
			if !ok || err != nil || math.IsNaN(ms) || math.IsInf(ms, 0) {
				return Goodput{}, fmt.Errorf("--goodput %q: want KEY:VALUE with a number of milliseconds, e.g. ttft:300", pair)
			}
			if ms < 0 {
				return Goodput{}, fmt.Errorf("--goodput %q: the objective must not be negative", pair)
			}
			d := time.Duration(ms * float64(time.Millisecond))
			switch key {
			case MetricTTFT:
				g.TTFT, g.HasTTFT = d, true
			case MetricTPOT:
				g.TPOT, g.HasTPOT = d, true
			case MetricE2EL:
				g.E2EL, g.HasE2EL = d, true
			default:
				return Goodput{}, fmt.Errorf("--goodput %q: the key must be one of ttft, tpot, e2el", pair)
			}
		}
	}
	return g, nil
}
