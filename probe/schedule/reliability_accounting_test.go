package schedule_test

import (
	"fmt"
	"math/rand/v2"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vllm-prober/vllm-prober/collector"
	"github.com/vllm-prober/vllm-prober/config"
	"github.com/vllm-prober/vllm-prober/probe"
	"github.com/vllm-prober/vllm-prober/probe/ledger"
	"github.com/vllm-prober/vllm-prober/probe/schedule"
	"github.com/vllm-prober/vllm-prober/simulator"
)

// countingSink counts the engine's calls per pair, across reloads, and
// when each running pair's current series began: at the PairStarted of a
// pair not running (a pair removed and added again before its last
// requests ended was never stopped, and its series continue).
type countingSink struct {
	mu       sync.Mutex
	offered  map[string]int
	finished map[string]int
	began    map[string]time.Time
}

func (c *countingSink) PairStarted(p config.Pair) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.began[p.Key.String()]; !ok {
		c.began[p.Key.String()] = time.Now()
	}
}

func (c *countingSink) PairStopped(key config.PairKey) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.began, key.String())
}

func (c *countingSink) Offered(key config.PairKey) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.offered[key.String()]++
}

func (c *countingSink) Finished(r *probe.Result) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.finished[r.Key().String()]++
}

// accounting is what checks a run: a ledger file, a collector and a
// countingSink.
type accounting struct {
	path     string
	lg       *ledger.Ledger
	coll     *collector.Collector
	reg      *prometheus.Registry
	counting *countingSink
}

func newAccounting(t *testing.T) *accounting {
	t.Helper()
	a := &accounting{path: filepath.Join(t.TempDir(), "ledger.jsonl")}
	var err error
	if a.lg, err = ledger.Open(config.Ledger{Path: a.path}, nil); err != nil {
		t.Fatal(err)
	}
	a.coll, a.reg = newCollectorRegistry()
	a.counting = &countingSink{offered: map[string]int{}, finished: map[string]int{}, began: map[string]time.Time{}}
	return a
}

// sinks are the engine's sinks, extra first. counting comes before the
// collector: it knows a series began before the collector creates it, so
// no record of the series is scheduled before.
func (a *accounting) sinks(extra ...probe.Sink) []probe.Sink {
	return append(extra, a.counting, a.coll, a.lg)
}

// accountingWorld is the mutable config and simulator a random run drives.
type accountingWorld struct {
	sim     *simulator.Server
	url     string
	rng     *rand.Rand
	rate    float64
	timeout time.Duration
	withB   bool
}

func (w *accountingWorld) config() *config.Config {
	chat := relChatProbe("chat", w.rate, w.timeout)
	chat.Burstiness = 1
	comp := relChatProbe("completions", 8, 500*time.Millisecond)
	comp.API, comp.Burstiness = config.APICompletions, 1
	comp.Workload = config.Workload{Random: &config.RandomWorkload{InputTokens: 16, OutputTokens: 4}}
	comp.MaxInFlight = 3 // the cap is hit under stalls
	comp.Quality = config.Quality{FinishReasons: []string{"stop", "length"}}
	cfg := &config.Config{Probes: []config.Probe{chat, comp}}
	cfg.Targets = append(cfg.Targets, config.Target{Name: "a", URL: w.url, Model: "sim-llama"})
	if w.withB {
		cfg.Targets = append(cfg.Targets, config.Target{Name: "b", URL: w.url, Model: "sim-llama"})
	}
	return cfg
}

// step makes one random change and returns its name.
func (w *accountingWorld) step() string {
	switch w.rng.IntN(5) {
	case 0:
		f := simulator.Faults{StallDuration: 2 * time.Second}
		f.HTTP500, f.Stall, f.Disconnect = w.rng.Float64()*0.3, w.rng.Float64()*0.3, w.rng.Float64()*0.2
		f.BadAnswer, f.ErrorEvent = w.rng.Float64()*0.2, w.rng.Float64()*0.2
		w.sim.SetFaults(f)
		return "faults"
	case 1:
		w.rate = 5 + w.rng.Float64()*20
		return "rate"
	case 2:
		w.withB = !w.withB
		return "toggle b"
	case 3:
		w.timeout = time.Duration(200+w.rng.IntN(600)) * time.Millisecond
		return "timeout"
	default:
		return "unchanged"
	}
}

// TestAccountingInvariant drives random faults and reloads (changed rates
// and timeouts, a target added and removed, unchanged reloads) against the
// real request path and checks, per (target, probe): a removed pair's
// series stay until its last request was counted, every offered request
// finished exactly once with a ledger record (seqs 1..n, no gap, no
// duplicate), offered = sum of dispositions + in flight in the counters at
// every step, and the ledger records of the pair's current series equal
// its counters per disposition.
func TestAccountingInvariant(t *testing.T) {
	for _, seed := range []uint64{1, 2} {
		t.Run(fmt.Sprintf("seed %d", seed), func(t *testing.T) {
			t.Parallel()
			runAccounting(t, seed)
		})
	}
}

func runAccounting(t *testing.T, seed uint64) {
	o := simulator.DefaultOptions()
	o.Seed, o.Jitter = int64(seed), 0
	sim, err := simulator.New(o)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(sim.Handler())
	t.Cleanup(func() { srv.Close(); sim.Close() })
	w := &accountingWorld{sim: sim, url: srv.URL, rng: rand.New(rand.NewPCG(seed, 7)), rate: 10, timeout: 400 * time.Millisecond}

	a := newAccounting(t)
	e := schedule.NewEngine(schedule.EngineOptions{Sinks: a.sinks(), Grace: 300 * time.Millisecond})
	path, lg, reg, counting := a.path, a.lg, a.reg, a.counting

	apply := func(cfg *config.Config) {
		if err := e.Apply(cfg); err != nil {
			t.Fatal(err)
		}
	}
	apply(w.config())
	var steps []string
	for range 40 {
		time.Sleep(time.Duration(30+w.rng.IntN(120)) * time.Millisecond)
		steps = append(steps, w.step())
		apply(w.config())
		for key, pc := range gatherCounts(t, reg) {
			if pc.inFlight < 0 || sum(pc.dispositions)+pc.inFlight != pc.offered {
				t.Errorf("after %v: %s offered %g, dispositions %v, in flight %g", steps, key, pc.offered, pc.dispositions, pc.inFlight)
			}
		}
	}
	recs := schedule.StopAndReadLedger(t, e, lg, path)
	checkEveryRequestOnce(t, recs, counting)
	checkCurrentSeries(t, recs, gatherCounts(t, reg), counting.began)
	t.Logf("steps %v: %d requests", steps, len(recs))
}

// checkEveryRequestOnce: per pair, offered == finished == ledger records,
// whose seqs are exactly 1..n.
func checkEveryRequestOnce(t *testing.T, recs []ledger.Record, c *countingSink) {
	t.Helper()
	seqs := map[string][]uint64{}
	for _, r := range recs {
		key := recordKey(r)
		seqs[key] = append(seqs[key], r.Seq)
	}
	for key, n := range c.offered {
		if c.finished[key] != n || len(seqs[key]) != n {
			t.Errorf("%s: offered %d, finished %d, ledger records %d", key, n, c.finished[key], len(seqs[key]))
		}
		s := seqs[key]
		slices.Sort(s)
		for i, v := range s {
			if v != uint64(i+1) {
				t.Errorf("%s: ledger seqs are not 1..%d: position %d holds %d", key, len(s), i, v)
				break
			}
		}
	}
}

// checkCurrentSeries compares the counters of the pairs configured at the
// end with the ledger records scheduled since their series began.
func checkCurrentSeries(t *testing.T, recs []ledger.Record, counts map[string]*pairCounts, addedAt map[string]time.Time) {
	t.Helper()
	var current []ledger.Record
	for _, r := range recs {
		if at, ok := addedAt[recordKey(r)]; ok && !r.Scheduled.Before(at) {
			current = append(current, r)
		}
	}
	for key := range counts {
		if _, ok := addedAt[key]; !ok && key != "/" {
			t.Errorf("%s has series but is not configured", key)
		}
	}
	for key, pc := range counts {
		if pc.inFlight != 0 {
			t.Errorf("%s: %g in flight after shutdown", key, pc.inFlight)
		}
	}
	checkLedgerMatches(t, current, counts)
}
