// Package capacity is the capacity search of `vllm-prober capacity`: the
// staircase of offered loads with repeats and bisection, the written pass
// rule a level must meet, and the search's printed table, verdict and
// JSON report. How a level is run is the caller's (a LevelFunc).
package capacity

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/vllm-prober/vllm-prober/bench/pyfmt"
	"github.com/vllm-prober/vllm-prober/bench/stats"
)

// PassRule is the written rule a capacity level must meet on every repeat:
// the acceptance ratio at least MinAcceptance, the Percentile of each
// latency with an objective at or below it, and a steady state. A repeat
// with objectives in which no request completed or timed out has no
// latency to meet them with, and fails.
type PassRule struct {
	MinAcceptance    float64
	Percentile       float64 // e.g. 99
	TTFT, TPOT, E2EL time.Duration
	// SteadyRatio and SteadyGrowth define the steady state: a repeat is
	// not_steady when the median TTFT (E2EL for an embeddings probe) of
	// the last third of its requests is above SteadyRatio times that of
	// the first third and above it by more than SteadyGrowth
	// (stats.Metrics.SteadyFirstThird, SteadyLastThird): its queue kept
	// growing through the window, so a longer level would have done
	// worse. SteadyRatio 0 turns the check off.
	SteadyRatio  float64
	SteadyGrowth time.Duration
	// SteadyMetric names the latency of the steady check in String:
	// stats.MetricE2EL for an embeddings probe; "" is TTFT.
	SteadyMetric string
}

// notSteady is the flag of a repeat whose latency kept growing.
const notSteady = "not_steady"

// String writes the rule out, for the report.
func (r PassRule) String() string {
	parts := []string{fmt.Sprintf("acceptance >= %s", pyfmt.Float(r.MinAcceptance, 4))}
	p := "p" + pyfmt.Percentile(r.Percentile)
	for _, s := range []struct {
		name string
		d    time.Duration
	}{{stats.MetricTTFT, r.TTFT}, {stats.MetricTPOT, r.TPOT}, {stats.MetricE2EL, r.E2EL}} {
		if s.d > 0 {
			parts = append(parts, fmt.Sprintf("%s %s <= %s", p, s.name, s.d))
		}
	}
	if r.SteadyRatio > 0 {
		parts = append(parts, fmt.Sprintf("steady (last-third %s p50 <= %s x first third, or within %s of it)",
			cmp.Or(r.SteadyMetric, stats.MetricTTFT), pyfmt.Rate(r.SteadyRatio), r.SteadyGrowth))
	}
	return strings.Join(parts, " and ")
}

// steady reports whether a repeat's latency held steady through its window.
func (r PassRule) steady(m stats.Metrics) bool {
	first, last := m.SteadyFirstThird, m.SteadyLastThird
	return r.SteadyRatio <= 0 || last <= r.SteadyRatio*first || last-first <= stats.Milliseconds(r.SteadyGrowth)
}

// Check applies the rule to a repeat's metrics and says why it failed.
func (r PassRule) Check(m stats.Metrics) (bool, []string) {
	var why []string
	if !r.steady(m) {
		why = append(why, fmt.Sprintf("%s: last-third %s p50 %.2fms vs %.2fms in the first third",
			notSteady, cmp.Or(m.SteadyMetric, stats.MetricTTFT), m.SteadyLastThird, m.SteadyFirstThird))
	}
	if m.Acceptance < r.MinAcceptance {
		why = append(why, fmt.Sprintf("acceptance %s < %s", pyfmt.Float(m.Acceptance, 4), pyfmt.Float(r.MinAcceptance, 4)))
	}
	if (r.TTFT > 0 || r.TPOT > 0 || r.E2EL > 0) && m.Latency[stats.MetricE2EL].Empty {
		// Every request was shed, failed or cut: no latency to hold to its
		// objective, which a low --pass-acceptance must not pass as met.
		why = append(why, "no request completed or timed out: its latency objectives are not met")
	}
	for _, s := range []struct {
		name string
		d    time.Duration
	}{{stats.MetricTTFT, r.TTFT}, {stats.MetricTPOT, r.TPOT}, {stats.MetricE2EL, r.E2EL}} {
		if s.d <= 0 {
			continue
		}
		// A latency no request measured (an embeddings probe's TTFT, the
		// TPOT of one-token answers) is not judged.
		if v := m.LatencyPercentile(s.name, r.Percentile); v > stats.Milliseconds(s.d) {
			why = append(why, fmt.Sprintf("p%s %s %.2fms > %s", pyfmt.Percentile(r.Percentile), s.name, v, s.d))
		}
	}
	return len(why) == 0, why
}

// Repeat is one run of one level.
type Repeat struct {
	Rate    float64
	Index   int
	Metrics stats.Metrics
	Pass    bool
	Why     []string
	// NotSteady flags a repeat whose latency kept growing (PassRule).
	NotSteady bool
}

// LevelFunc runs one repeat of the level at rate; repeat counts from 0.
type LevelFunc func(ctx context.Context, rate float64, repeat int) (stats.Metrics, error)

// Orders of the staircase's runs (Options.Order).
const (
	// OrderAscending runs every repeat of a level, then the next level.
	OrderAscending = "ascending"
	// OrderInterleaved climbs two neighbouring levels at a time and
	// alternates their repeats (8, 16, 8, 16), so a drift of the server
	// over time does not fall on one level only.
	OrderInterleaved = "interleaved"
	// OrderRandom climbs two neighbouring levels at a time and runs their
	// repeats in a seeded random order.
	OrderRandom = "random"
)

// Orders lists the values of --order.
var Orders = []string{OrderAscending, OrderInterleaved, OrderRandom}

// Options configures a capacity search.
type Options struct {
	Rates      []float64 // the staircase, ascending
	Repeats    int       // per level, at least 1
	Resolution float64   // bisect until lowest fail - highest pass <= this; 0 = a quarter of that gap
	Rule       PassRule
	Order      string       // one of Orders; "" = ascending
	Seed       int64        // of OrderRandom
	OnRepeat   func(Repeat) // progress; may be nil
	// Fixed runs every level of the staircase and does not bisect, for
	// workers that cannot know the verdict before the merge: the verdict
	// is the climb's all the same (the first failing level ends the
	// passes), the levels above it are run and reported too.
	Fixed bool
}

// Search is the outcome of a capacity search.
type Search struct {
	Rule        string
	Repeats     []Repeat // in the order they ran
	HighestPass float64  // 0 when no level passed
	LowestFail  float64  // +Inf when no level failed
	// Rated is the highest offered load for which every repeat passed, and
	// every lower level run as well: 0 when none passed.
	Rated float64
	// Saturated is false when no level failed: the staircase ended first.
	Saturated bool
}

// Run climbs the staircase in o.Order, stops after the first block
// with a failing level (unless o.Fixed), then bisects between the highest
// passing and the lowest failing load (unless o.Fixed).
func Run(ctx context.Context, o Options, level LevelFunc) (*Search, error) {
	s := &Search{Rule: o.Rule.String(), LowestFail: math.Inf(1)}
	rng := rand.New(rand.NewPCG(uint64(o.Seed), 0x5ca1e))
	width := 2
	if o.Order == OrderAscending || o.Order == "" {
		width = 1
	}
	failed := false
	for i := 0; i < len(o.Rates) && !(failed && !o.Fixed); i += width {
		block := o.Rates[i:min(i+width, len(o.Rates))]
		pass, err := s.block(ctx, o, level, block, rng)
		if err != nil {
			return s, err
		}
		for _, rate := range block {
			if failed {
				break
			}
			if !pass[rate] {
				s.LowestFail, failed = rate, true
			} else {
				s.HighestPass = rate
			}
		}
	}
	s.Saturated = failed
	if s.Saturated && s.HighestPass > 0 && !o.Fixed {
		if err := s.bisect(ctx, o, level, rng); err != nil {
			return s, err
		}
	}
	s.Rated = s.HighestPass
	return s, nil
}

// bisect narrows the gap between the highest passing and the lowest
// failing load down to the resolution.
func (s *Search) bisect(ctx context.Context, o Options, level LevelFunc, rng *rand.Rand) error {
	res := o.Resolution
	if res <= 0 {
		res = (s.LowestFail - s.HighestPass) / 4
	}
	for s.LowestFail-s.HighestPass > res*(1+1e-9) {
		mid := (s.HighestPass + s.LowestFail) / 2
		if mid <= s.HighestPass || mid >= s.LowestFail {
			return nil // below float resolution
		}
		pass, err := s.block(ctx, o, level, []float64{mid}, rng)
		if err != nil {
			return err
		}
		if pass[mid] {
			s.HighestPass = mid
		} else {
			s.LowestFail = mid
		}
	}
	return nil
}

// block runs every repeat of the given levels in o.Order and says which
// levels passed: a level passes when every repeat does.
func (s *Search) block(ctx context.Context, o Options, level LevelFunc, rates []float64, rng *rand.Rand) (map[float64]bool, error) {
	type run struct {
		rate   float64
		repeat int
	}
	var runs []run
	if o.Order == OrderAscending || o.Order == "" {
		for _, rate := range rates {
			for i := range max(1, o.Repeats) {
				runs = append(runs, run{rate, i})
			}
		}
	} else {
		for i := range max(1, o.Repeats) {
			for _, rate := range rates {
				runs = append(runs, run{rate, i})
			}
		}
	}
	if o.Order == OrderRandom {
		rng.Shuffle(len(runs), func(i, j int) { runs[i], runs[j] = runs[j], runs[i] })
	}
	pass := map[float64]bool{}
	for _, rate := range rates {
		pass[rate] = true
	}
	for _, r := range runs {
		ok, err := s.repeat(ctx, o, level, r.rate, r.repeat)
		if err != nil {
			return nil, err
		}
		pass[r.rate] = pass[r.rate] && ok
	}
	return pass, nil
}

// repeat runs one repeat of one level and records it.
func (s *Search) repeat(ctx context.Context, o Options, level LevelFunc, rate float64, i int) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, fmt.Errorf("capacity search interrupted: %w", err)
	}
	m, err := level(ctx, rate, i)
	if err != nil {
		return false, fmt.Errorf("level %s req/s repeat %d: %w", pyfmt.Rate(rate), i+1, err)
	}
	r := Repeat{Rate: rate, Index: i, Metrics: m, NotSteady: !o.Rule.steady(m)}
	r.Pass, r.Why = o.Rule.Check(m)
	s.Repeats = append(s.Repeats, r)
	if o.OnRepeat != nil {
		o.OnRepeat(r)
	}
	return r.Pass, nil
}
