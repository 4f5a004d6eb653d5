package server

import (
	"regexp"
	"testing"
	"time"

	"github.com/prometheus/common/model"

	"github.com/vllm-prober/vllm-prober/config"
)

// TestServerScraperFollowsPairs checks the scraper as a sink of the
// engine: a target is scraped while one of its pairs runs, a change of a
// probe leaves its loop alone, a change of the settings restarts it.
func TestServerScraperFollowsPairs(t *testing.T) {
	srv := newFakeServer(t, sample(t))
	h := newHarness(t, ScraperOptions{})
	target := serverTarget("a", srv)
	pair := func(probe string, rate float64) config.Pair {
		return config.Pair{Key: config.PairKey{Target: "a", Probe: probe}, Target: target, Probe: config.Probe{Name: probe, Rate: rate}}
	}
	loop := func() *targetLoop {
		h.mu.RLock()
		defer h.mu.RUnlock()
		return h.loops[scrapeKey{target: "a"}]
	}
	h.PairStarted(pair("p", 1))
	h.PairStarted(pair("q", 1))
	h.wait(t, "a")
	first := loop()

	steps := []struct {
		name    string
		do      func()
		scraped bool
		same    bool // the loop is the first one
	}{
		{"a probe change keeps the loop", func() { h.PairStarted(pair("p", 2)) }, true, true},
		{"one pair stopped keeps the target", func() { h.PairStopped(pair("p", 2).Key) }, true, true},
		{"unchanged settings keep the loop", func() { h.Configure(config.ServerMetrics{}) }, true, true},
		{"changed settings restart the loop", func() { h.Configure(config.ServerMetrics{Interval: model.Duration(time.Minute)}) }, true, false},
		{"the last pair stopped stops the target", func() { h.PairStopped(pair("q", 1).Key) }, false, false},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			st.do()
			l := loop()
			if (l != nil) != st.scraped {
				t.Fatalf("target scraped = %v, want %v", l != nil, st.scraped)
			}
			if (l == first) != st.same {
				t.Errorf("same loop = %v, want %v", l == first, st.same)
			}
		})
	}
	if st := h.State("a", ""); st != (ScrapeState{}) {
		t.Errorf("state of a target without pairs: %+v", st)
	}
}

// TestServerScraperSharesAllowRegexp: the targets' loops share one
// compiled allow regexp (~26 KB each when every loop compiled its own,
// docs/BENCHMARKS.md, "1,000 pairs"); a changed allow gives every
// restarted loop the new one.
func TestServerScraperSharesAllowRegexp(t *testing.T) {
	h := newHarness(t, ScraperOptions{})
	names := []string{"a", "b", "c"}
	for _, name := range names {
		h.PairStarted(config.Pair{Key: config.PairKey{Target: name, Probe: "p"},
			Target: config.Target{Name: name, URL: "http://127.0.0.1:1", MetricsPath: "/metrics"}})
	}
	allows := func() map[*regexp.Regexp][]string {
		h.mu.RLock()
		defer h.mu.RUnlock()
		out := map[*regexp.Regexp][]string{}
		for _, name := range names {
			re := h.loops[scrapeKey{target: name}].allow
			out[re] = append(out[re], re.String())
		}
		return out
	}
	if got := allows(); len(got) != 1 {
		t.Errorf("%d compiled allow regexps for %d targets, want 1: %v", len(got), len(names), got)
	}
	re, err := config.NewRegexp("vllm:num_requests_running")
	if err != nil {
		t.Fatal(err)
	}
	h.Configure(config.ServerMetrics{Allow: re})
	got := allows()
	if len(got) != 1 {
		t.Fatalf("%d compiled allow regexps after a change, want 1: %v", len(got), got)
	}
	for re := range got {
		if want := "^(?:vllm:num_requests_running)$"; re.String() != want {
			t.Errorf("allow after a change %q, want %q", re.String(), want)
		}
	}
}
