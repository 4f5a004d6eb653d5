// Package perf measures the prober itself: how exactly it times what a
// client sees (against the simulator's ground-truth trace), how punctually
// its open-loop scheduler sends, and what the daemon costs in CPU, memory
// and scrape size, and whether its memory stays bounded while pairs come
// and go (Soak). `make bench` runs it through cmd/perf, which prints the
// summary table of docs/BENCHMARKS.md.
//
// The fidelity and schedule runs are in-process; the cost, fleet and soak
// runs measure the real daemon binary in its own process, next to
// simulators in another process (cost) or in this one (fleet, soak).
package perf

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/common/model"

	"github.com/vllm-prober/vllm-prober/config"
	"github.com/vllm-prober/vllm-prober/internal/quantile"
	"github.com/vllm-prober/vllm-prober/probe"
	"github.com/vllm-prober/vllm-prober/probe/schedule"
	"github.com/vllm-prober/vllm-prober/simulator"
)

// Stats summarises a sample of durations.
type Stats struct {
	N             int
	P50, P99, Max time.Duration
}

// Summarize returns nearest-rank quantiles of d (which it sorts).
func Summarize(d []time.Duration) Stats {
	if len(d) == 0 {
		return Stats{}
	}
	slices.Sort(d)
	return Stats{N: len(d), P50: quantile.NearestRank(d, 0.5), P99: quantile.NearestRank(d, 0.99), Max: d[len(d)-1]}
}

// String renders the stats in microseconds.
func (s Stats) String() string {
	return fmt.Sprintf("n=%d p50=%s p99=%s max=%s", s.N, us(s.P50), us(s.P99), us(s.Max))
}

// us formats d in microseconds with one decimal below 100 µs.
func us(d time.Duration) string {
	v := float64(d) / float64(time.Microsecond)
	if math.Abs(v) < 100 {
		return fmt.Sprintf("%.1fµs", v)
	}
	return fmt.Sprintf("%.0fµs", v)
}

// collector keeps every finished Result; it is the engine's only Sink.
type collector struct {
	mu      sync.Mutex
	offered int
	results []*probe.Result
}

func (c *collector) PairStarted(config.Pair) {}

func (c *collector) PairStopped(config.PairKey) {}

func (c *collector) Offered(config.PairKey) {
	c.mu.Lock()
	c.offered++
	c.mu.Unlock()
}

func (c *collector) Finished(r *probe.Result) {
	c.mu.Lock()
	c.results = append(c.results, r)
	c.mu.Unlock()
}

func (c *collector) all() (offered int, results []*probe.Result) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.offered, slices.Clone(c.results)
}

// load describes one engine run: one target, one completions probe.
type load struct {
	url          string
	rate         float64
	burstiness   float64
	outputTokens int
	duration     time.Duration
	// newSender replaces the real request path when set.
	newSender func(config.Target, config.Probe) (schedule.Sender, error)
	// sleep replaces the engine's wait when set.
	sleep func(context.Context, time.Duration) error
	// timeout is the probe's timeout; 0 = 10 s.
	timeout time.Duration
	// grace is how long in-flight requests may finish once the run stops
	// offering; 0 = 10 s.
	grace time.Duration
}

// run drives the engine for l.duration and returns every Result once all
// requests have ended.
func (l load) run(ctx context.Context) (offered int, results []*probe.Result, err error) {
	c := &collector{}
	if l.timeout == 0 {
		l.timeout = 10 * time.Second
	}
	if l.grace == 0 {
		l.grace = 10 * time.Second
	}
	e := schedule.NewEngine(schedule.EngineOptions{Sinks: []probe.Sink{c}, Grace: l.grace, NewRequester: l.newSender, Sleep: l.sleep})
	p := config.Probe{
		Name: "perf", API: config.APICompletions, Rate: l.rate, Burstiness: l.burstiness,
		MaxInFlight: 1 << 16, Timeout: model.Duration(l.timeout),
		Request:  config.Request{MaxTokens: l.outputTokens, IgnoreEOS: true},
		Workload: config.Workload{Random: &config.RandomWorkload{InputTokens: 64, OutputTokens: l.outputTokens, Seed: 1}},
		Quality:  config.Quality{FinishReasons: []string{"stop", "length"}, MinOutputTokens: 1},
	}
	cfg := &config.Config{Targets: []config.Target{{Name: "sim", URL: l.url, Model: "sim-llama"}}, Probes: []config.Probe{p}}
	if err := e.Apply(cfg); err != nil {
		return 0, nil, fmt.Errorf("start engine: %w", err)
	}
	select {
	case <-time.After(l.duration):
	case <-ctx.Done():
	}
	// Shutdown stops scheduling and waits up to the grace for in-flight
	// requests, which normally all finish.
	if err := e.Shutdown(context.Background()); err != nil {
		return 0, nil, fmt.Errorf("stop engine: %w", err)
	}
	offered, results = c.all()
	return offered, results, ctx.Err()
}

// startSimulator runs a simulator on a loopback port with jitter off.
func startSimulator(edit func(o *simulator.Options)) (*simulator.Server, string, error) {
	o := simulator.DefaultOptions()
	o.Seed, o.Jitter, o.PrefixCaching = 1, 0, false
	if edit != nil {
		edit(&o)
	}
	sim, url, err := simulator.Serve(o, "127.0.0.1:0")
	if err != nil {
		return nil, "", fmt.Errorf("start simulator: %w", err)
	}
	return sim, url, nil
}
