package collector

import (
	"slices"
	"strings"

	"github.com/prometheus/common/model"

	"github.com/vllm-prober/vllm-prober/config"
	"github.com/vllm-prober/vllm-prober/internal/testclock"
)

// fixedNow and clock are the clock of every test (testclock.Fixed):
// durations are 0, timestamps exact.
var (
	fixedNow = testclock.Fixed
	clock    = testclock.Frozen
)

func dur(s string) model.Duration {
	d, err := model.ParseDuration(s)
	if err != nil {
		panic(err)
	}
	return d
}

// testConfig builds a config with the given targets (name -> probes; nil =
// all) and probes (name -> SLO).
func testConfig(targets map[string][]string, probes map[string]config.SLO) *config.Config {
	cfg := &config.Config{}
	for name, slo := range probes {
		cfg.Probes = append(cfg.Probes, config.Probe{Name: name, API: config.APIChat, Rate: 1, SLO: slo})
	}
	for name, ps := range targets {
		cfg.Targets = append(cfg.Targets, config.Target{Name: name, URL: "http://127.0.0.1:1", Probes: ps})
	}
	return cfg
}

// syncPairs makes the collector's pairs those of cfg through the Sink
// calls the engine makes: PairStopped for pairs cfg lacks, PairStarted for
// every pair of cfg (an unchanged pair's PairStarted changes nothing).
func syncPairs(c *Collector, cfg *config.Config) {
	pairs := cfg.Pairs()
	c.mu.RLock()
	var gone []config.PairKey
	for key := range c.pairs {
		if !slices.ContainsFunc(pairs, func(p config.Pair) bool { return p.Key == key }) {
			gone = append(gone, key)
		}
	}
	c.mu.RUnlock()
	for _, k := range gone {
		c.PairStopped(k)
	}
	for _, p := range pairs {
		c.PairStarted(p)
	}
}

func lines(s ...string) string { return strings.Join(s, "\n") + "\n" }
