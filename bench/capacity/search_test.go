package capacity

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vllm-prober/vllm-prober/bench/openloop"
	"github.com/vllm-prober/vllm-prober/bench/stats"
	"github.com/vllm-prober/vllm-prober/probe"
)

// fakeLevels passes every repeat at or below capacity; failRepeat makes
// one (rate, repeat) fail anyway. It records the rates it ran.
type fakeLevels struct {
	capacity   float64
	failRate   float64
	failRepeat int
	ran        []float64
}

func (f *fakeLevels) run(_ context.Context, rate float64, repeat int) (stats.Metrics, error) {
	f.ran = append(f.ran, rate)
	acc := 1.0
	if rate > f.capacity || (rate == f.failRate && repeat == f.failRepeat) {
		acc = 0.5
	}
	n := 100
	return stats.Metrics{Offered: n, Completed: n, Acceptance: acc,
		Dispositions: map[probe.Disposition]int{probe.Accepted: int(acc * float64(n))}}, nil
}

func TestRunSearch(t *testing.T) {
	stairs := []float64{1, 2, 4, 8, 16}
	tests := []struct {
		name       string
		levels     fakeLevels
		resolution float64
		wantRated  float64
		wantRan    []float64 // distinct rates in order
		saturated  bool
		fixed      bool // Options.Fixed: every level, no bisection
	}{
		{"bisects between 4 and 8", fakeLevels{capacity: 5}, 0, 5, []float64{1, 2, 4, 8, 6, 5}, true, false},
		{"finer resolution", fakeLevels{capacity: 5}, 0.5, 5, []float64{1, 2, 4, 8, 6, 5, 5.5}, true, false},
		{"never saturates", fakeLevels{capacity: 100}, 0, 16, stairs, false, false},
		{"first level fails", fakeLevels{capacity: 0.5}, 0, 0, []float64{1}, true, false},
		{"one failing repeat fails the level", fakeLevels{capacity: 100, failRate: 4, failRepeat: 1}, 0, 3.5,
			[]float64{1, 2, 4, 3, 3.5}, true, false},
		{"fixed: every level, no bisection", fakeLevels{capacity: 5}, 0, 4, stairs, true, true},
		{"fixed: a pass above the first failure does not count", fakeLevels{capacity: 100, failRate: 2}, 0, 1, stairs, true, true},
		{"fixed: never saturates", fakeLevels{capacity: 100}, 0, 16, stairs, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := tt.levels
			s, err := Run(context.Background(), Options{Rates: stairs, Repeats: 2, Resolution: tt.resolution,
				Rule: PassRule{MinAcceptance: 0.99, Percentile: 99}, Order: OrderAscending, Fixed: tt.fixed}, f.run)
			if err != nil {
				t.Fatal(err)
			}
			if s.Rated != tt.wantRated || s.Saturated != tt.saturated {
				t.Errorf("rated %v saturated %v, want %v %v", s.Rated, s.Saturated, tt.wantRated, tt.saturated)
			}
			if ran := slices.Compact(slices.Clone(f.ran)); !slices.Equal(ran, tt.wantRan) {
				t.Errorf("levels run %v, want %v", ran, tt.wantRan)
			}
			if len(f.ran) != 2*len(tt.wantRan) || len(s.Repeats) != len(f.ran) {
				t.Errorf("%d runs, %d repeats recorded, want 2 per level", len(f.ran), len(s.Repeats))
			}
		})
	}
}

// TestRunSearchOrder checks the order of the runs: interleaved alternates
// the repeats of two neighbouring levels, random shuffles them with the
// seed; both stop after the block holding the first failing level.
func TestRunSearchOrder(t *testing.T) {
	stairs := []float64{1, 2, 4, 8, 16}
	run := func(order string, seed int64, capacity float64, fixed ...bool) ([]float64, *Search) {
		f := fakeLevels{capacity: capacity}
		s, err := Run(context.Background(), Options{Rates: stairs, Repeats: 2, Order: order, Seed: seed,
			Rule: PassRule{MinAcceptance: 0.99, Percentile: 99}, Fixed: len(fixed) > 0 && fixed[0]}, f.run)
		if err != nil {
			t.Fatal(err)
		}
		return f.ran, s
	}
	t.Run("interleaved", func(t *testing.T) {
		ran, s := run(OrderInterleaved, 0, 5)
		if want := []float64{1, 2, 1, 2, 4, 8, 4, 8, 6, 6, 5, 5}; !slices.Equal(ran, want) || s.Rated != 5 {
			t.Errorf("ran %v rated %v, want %v and 5", ran, s.Rated, want)
		}
		for i, r := range s.Repeats[:4] {
			if r.Index != i/2 {
				t.Errorf("run %d at %v is repeat %d, want %d", i, r.Rate, r.Index+1, i/2+1)
			}
		}
	})
	t.Run("interleaved, the lower level of a block fails", func(t *testing.T) {
		ran, s := run(OrderInterleaved, 0, 3)
		if want := []float64{1, 2, 1, 2, 4, 8, 4, 8, 3, 3, 3.5, 3.5}; !slices.Equal(ran, want) || s.Rated != 3 || s.LowestFail != 3.5 {
			t.Errorf("ran %v rated %v lowest fail %v, want %v, 3 and 3.5", ran, s.Rated, s.LowestFail, want)
		}
	})
	t.Run("interleaved, fixed: every block, the climb's verdict", func(t *testing.T) {
		ran, s := run(OrderInterleaved, 0, 5, true)
		if want := []float64{1, 2, 1, 2, 4, 8, 4, 8, 16, 16}; !slices.Equal(ran, want) || s.Rated != 4 || s.LowestFail != 8 {
			t.Errorf("ran %v rated %v lowest fail %v, want %v, 4 and 8", ran, s.Rated, s.LowestFail, want)
		}
	})
	t.Run("random is seeded", func(t *testing.T) {
		a, _ := run(OrderRandom, 7, 5)
		b, _ := run(OrderRandom, 7, 5)
		if !slices.Equal(a, b) {
			t.Errorf("seed 7 ran %v then %v", a, b)
		}
		orders := map[string]bool{}
		for seed := range int64(8) {
			ran, s := run(OrderRandom, seed, 5)
			block := slices.Clone(ran[:4])
			slices.Sort(block)
			if !slices.Equal(block, []float64{1, 1, 2, 2}) || s.Rated != 5 {
				t.Errorf("seed %d ran %v rated %v: want the first block to be levels 1 and 2 twice each", seed, ran, s.Rated)
			}
			orders[fmt.Sprint(ran[:4])] = true
		}
		if len(orders) < 2 {
			t.Errorf("8 seeds gave one order %v", orders)
		}
	})
}

func TestRunSearchError(t *testing.T) {
	boom := errors.New("boom")
	_, err := Run(context.Background(), Options{Rates: []float64{1}, Repeats: 1},
		func(context.Context, float64, int) (stats.Metrics, error) { return stats.Metrics{}, boom })
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), "level 1.0 req/s") {
		t.Errorf("err = %v, want the level named and the cause wrapped", err)
	}
}

func TestPassRule(t *testing.T) {
	rule := PassRule{MinAcceptance: 0.99, Percentile: 99, TTFT: 500 * time.Millisecond, E2EL: 2 * time.Second}
	if got, want := rule.String(), "acceptance >= 0.9900 and p99 ttft <= 500ms and p99 e2el <= 2s"; got != want {
		t.Errorf("String = %q, want %q", got, want)
	}
	dists := func(ttft, e2el float64) map[string]stats.Dist {
		return map[string]stats.Dist{stats.MetricTTFT: {Percentiles: []stats.Percentile{{P: 99, MS: ttft}}}, stats.MetricE2EL: {Percentiles: []stats.Percentile{{P: 99, MS: e2el}}}}
	}
	tests := []struct {
		name string
		m    stats.Metrics
		pass bool
		why  string
	}{
		{"meets everything", stats.Metrics{Acceptance: 0.995, Latency: dists(499, 1999)}, true, ""},
		{"low acceptance", stats.Metrics{Acceptance: 0.98, Latency: dists(100, 100)}, false, "acceptance 0.9800 < 0.9900"},
		{"slow ttft", stats.Metrics{Acceptance: 1, Latency: dists(501, 100)}, false, "p99 ttft 501.00ms > 500ms"},
		{"slow e2el", stats.Metrics{Acceptance: 1, Latency: dists(1, 2500)}, false, "p99 e2el 2500.00ms > 2s"},
		// Every request shed or answered 5xx: nothing to judge the
		// latencies on, even with no floor on the acceptance.
		{"nothing measured", stats.Metrics{Acceptance: 0, Latency: map[string]stats.Dist{stats.MetricTTFT: {Empty: true}, stats.MetricE2EL: {Empty: true}}},
			false, "acceptance 0.0000 < 0.9900; no request completed or timed out: its latency objectives are not met"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pass, why := rule.Check(tt.m)
			if pass != tt.pass || strings.Join(why, "; ") != tt.why {
				t.Errorf("Check = %v %q, want %v %q", pass, why, tt.pass, tt.why)
			}
		})
	}
	noFloor := rule
	noFloor.MinAcceptance = 0
	empty := stats.Metrics{Latency: map[string]stats.Dist{stats.MetricTTFT: {Empty: true}, stats.MetricTPOT: {Empty: true}, stats.MetricE2EL: {Empty: true}}}
	if pass, _ := noFloor.Check(empty); pass {
		t.Error("--pass-acceptance 0 passed a repeat that measured no latency")
	}
	if pass, _ := (PassRule{Percentile: 99}).Check(empty); !pass {
		t.Error("a rule with no latency objective failed a repeat for measuring none")
	}
	// An embeddings probe measures no TTFT: an objective on it is not judged.
	emb := stats.Metrics{Acceptance: 1, Latency: map[string]stats.Dist{stats.MetricTTFT: {Empty: true},
		stats.MetricE2EL: {Percentiles: []stats.Percentile{{P: 99, MS: 100}}}}}
	if pass, why := rule.Check(emb); !pass {
		t.Errorf("embeddings repeat failed: %q", why)
	}
}

func TestPassRuleSteady(t *testing.T) {
	rule := PassRule{Percentile: 99, SteadyRatio: 2, SteadyGrowth: 50 * time.Millisecond}
	tests := []struct {
		first, last float64
		steady      bool
	}{
		{10, 30, true},    // tripled, but by less than 50ms
		{100, 180, true},  // less than doubled
		{10, 300, false},  // a growing queue
		{200, 500, false}, // more than doubled and by more than 50ms
		{0, 0, true},      // too few requests to tell
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.first, "->", tt.last), func(t *testing.T) {
			pass, why := rule.Check(stats.Metrics{SteadyFirstThird: tt.first, SteadyLastThird: tt.last})
			if pass != tt.steady || (len(why) > 0) == tt.steady {
				t.Errorf("Check = %v %v, want steady %v", pass, why, tt.steady)
			}
		})
	}
	// An embeddings probe's check compares E2EL, and says so.
	emb := rule
	emb.SteadyMetric = stats.MetricE2EL
	if !strings.Contains(emb.String(), "last-third e2el p50") || !strings.Contains(rule.String(), "last-third ttft p50") {
		t.Errorf("rules %q and %q do not name the latency they compare", emb.String(), rule.String())
	}
	if _, why := emb.Check(stats.Metrics{SteadyMetric: stats.MetricE2EL, SteadyFirstThird: 10, SteadyLastThird: 300}); len(why) != 1 ||
		!strings.Contains(why[0], "last-third e2el p50 300.00ms vs 10.00ms") {
		t.Errorf("why %q, want the e2el thirds named", why)
	}
	off := PassRule{Percentile: 99}
	if pass, _ := off.Check(stats.Metrics{SteadyFirstThird: 1, SteadyLastThird: 1000}); !pass {
		t.Error("SteadyRatio 0 should turn the check off")
	}
}

// TestPassRuleSeesTimeouts checks that capacity's pass rule reads the
// censored latencies: 98 fast requests and 2 client timeouts at 1 s fail
// a p99 E2EL objective of 500ms, which the completed requests alone meet.
func TestPassRuleSeesTimeouts(t *testing.T) {
	t0, gap := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), 10*time.Millisecond
	run := &openloop.Run{Start: t0, Timeout: time.Second}
	for i := range 100 {
		at := t0.Add(time.Duration(i) * gap)
		r := &probe.Result{Seq: uint64(i + 1), Scheduled: at, Sent: at, Disposition: probe.Accepted, TTFT: gap / 2, E2EL: gap, OutputTokens: 1}
		if i >= 98 {
			r.Disposition, r.Reason, r.TTFT, r.E2EL, r.OutputTokens = probe.ClientTimeout, probe.ReasonTimeout, 0, 0, 0
		}
		run.Results, run.Ended = append(run.Results, r), append(run.Ended, at.Add(gap))
	}
	run.End, run.Span = run.Ended[99], 99*gap
	m := stats.Compute(run, stats.Options{Percentiles: []float64{99}})
	rule := PassRule{MinAcceptance: 0.9, Percentile: 99, E2EL: 500 * time.Millisecond}
	pass, why := rule.Check(m)
	if pass || len(why) != 1 || !strings.HasPrefix(why[0], "p99 e2el 1000.00ms > 500ms") {
		t.Errorf("Check = %v %v, want a p99 e2el failure at the 1s timeout", pass, why)
	}
	if p99 := m.Dists[stats.MetricE2EL].Percentiles[0].MS; p99 > 500 {
		t.Errorf("vLLM's p99 E2EL %v over completed requests, want 10ms", p99)
	}
}
