package server

import (
	"reflect"
	"time"

	"github.com/vllm-prober/vllm-prober/config"
	"github.com/vllm-prober/vllm-prober/probe"
)

// Configure sets how every target is scraped; the loops of running targets
// restart when the settings change. Every target gets a loop for
// target_info; only targets with a metrics_path scrape /metrics.
func (s *ServerScraper) Configure(sm config.ServerMetrics) {
	set := settingsOf(sm)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped || set == s.settings {
		return
	}
	s.settings = set
	for name, l := range s.loops {
		s.replace(name, loopConfig{target: l.cfg.target, scrapeSettings: set})
	}
}

// settingsOf applies the defaults to unset server_metrics fields.
func settingsOf(sm config.ServerMetrics) scrapeSettings {
	interval, timeout := time.Duration(sm.Interval), time.Duration(sm.Timeout)
	if interval <= 0 {
		interval = time.Duration(config.DefaultGlobal.ServerMetrics.Interval)
	}
	if timeout <= 0 {
		timeout = time.Duration(config.DefaultGlobal.ServerMetrics.Timeout)
	}
	timeout = min(timeout, interval)
	allow := sm.Allow.Source
	if allow == "" && sm.Allow.Regexp != nil {
		allow = sm.Allow.String()
	}
	if allow == "" {
		allow = DefaultAllow
	}
	return scrapeSettings{interval: interval, timeout: timeout, allow: allow}
}

// PairStarted implements probe.Sink: the pair's target is scraped from now
// on; its loop restarts when the target's settings changed, not when only
// the probe did.
func (s *ServerScraper) PairStarted(p config.Pair) {
	t := p.Target
	t.Probes, t.Line = nil, 0 // the probe list does not affect scraping
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return
	}
	if s.pairs[t.Name] == nil {
		s.pairs[t.Name] = map[string]bool{}
	}
	s.pairs[t.Name][p.Key.Probe] = true
	w := loopConfig{target: t, scrapeSettings: s.settings}
	if l := s.loops[t.Name]; l != nil && reflect.DeepEqual(l.cfg, w) {
		return
	}
	s.replace(t.Name, w)
}

// PairStopped implements probe.Sink: a target whose last pair stopped is
// no longer scraped and its series disappear.
func (s *ServerScraper) PairStopped(key config.PairKey) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.pairs[key.Target], key.Probe)
	if len(s.pairs[key.Target]) > 0 {
		return
	}
	delete(s.pairs, key.Target)
	if l := s.loops[key.Target]; l != nil {
		l.cancel()
		delete(s.loops, key.Target)
	}
}

// Offered implements probe.Sink: requests are not the scraper's business.
func (s *ServerScraper) Offered(string, string) {}

// Finished implements probe.Sink: requests are not the scraper's business.
func (s *ServerScraper) Finished(*probe.Result) {}

// replace starts a loop for name with w in place of its running one, whose
// late results publish discards; s.mu is held.
func (s *ServerScraper) replace(name string, w loopConfig) {
	if old := s.loops[name]; old != nil {
		old.cancel()
	}
	s.loops[name] = s.start(w)
}
