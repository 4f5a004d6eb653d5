package server

import (
	"maps"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/model"

	"github.com/vllm-prober/vllm-prober/collector/metricname"
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
	for key, l := range s.loops {
		w := l.cfg
		w.scrapeSettings = set
		s.replace(key, w)
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

// PairStarted implements probe.Sink: the pair's server (its target, or its
// discovered replica) is scraped from now on; its loop restarts when the
// server's settings changed, not when only the probe did.
func (s *ServerScraper) PairStarted(p config.Pair) {
	t := p.Target
	t.Probes, t.Line = nil, 0 // the probe list does not affect scraping
	w := loopConfig{target: t, replica: p.Key.Replica, labels: p.Labels}
	key := w.key()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return
	}
	w.scrapeSettings = s.settings
	if s.pairs[key] == nil {
		s.pairs[key] = map[string]bool{}
	}
	s.pairs[key][p.Key.Probe] = true
	if l := s.loops[key]; l != nil && reflect.DeepEqual(l.cfg, w) {
		return
	}
	s.replace(key, w)
}

// PairStopped implements probe.Sink: a server whose last pair stopped is
// no longer scraped and its series disappear.
func (s *ServerScraper) PairStopped(pair config.PairKey) {
	key := scrapeKey{pair.Target, pair.Replica}
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.pairs[key], pair.Probe)
	if len(s.pairs[key]) > 0 {
		return
	}
	delete(s.pairs, key)
	if l := s.loops[key]; l != nil {
		l.cancel()
		delete(s.loops, key)
	}
}

// Offered implements probe.Sink: requests are not the scraper's business.
func (s *ServerScraper) Offered(config.PairKey) {}

// Finished implements probe.Sink: requests are not the scraper's business.
func (s *ServerScraper) Finished(*probe.Result) {}

// replace starts a loop for key with w in place of its running one, whose
// late results publish discards; s.mu is held.
func (s *ServerScraper) replace(key scrapeKey, w loopConfig) {
	if old := s.loops[key]; old != nil {
		old.cancel()
	}
	s.loops[key] = s.start(w)
}

// loopDescs are the descriptors of a loop's own series: labelled with
// target, and replica for a replica, whose target_info also carries the
// labels its discovery gave it (docs/design.md, Fleets).
type loopDescs struct{ success, duration, info, dropped *prometheus.Desc }

func newLoopDescs(c loopConfig) (loopDescs, []string) {
	own, _ := c.ownLabels()
	with := func(extra ...string) []string { return append(slices.Clone(own), extra...) }
	info := with(labelModel, labelServerVersion)
	var infoValues []string
	for _, name := range slices.Sorted(maps.Keys(c.labels)) {
		if slices.Contains(info, name) || !model.LegacyValidation.IsValidLabelName(name) || strings.HasPrefix(name, model.ReservedLabelPrefix) {
			continue // the prober's own labels win; Prometheus-reserved ones never came from a replica
		}
		info = append(info, name)
		infoValues = append(infoValues, serverLabel(c.labels[name]))
	}
	return loopDescs{
		success:  prometheus.NewDesc(metricname.ServerScrapeSuccess, metricname.ServerScrapeSuccessHelp, with(), nil),
		duration: prometheus.NewDesc(metricname.ServerScrapeDuration, metricname.ServerScrapeDurationHelp, with(), nil),
		info:     prometheus.NewDesc(metricname.TargetInfo, metricname.TargetInfoHelp, info, nil),
		dropped:  prometheus.NewDesc(metricname.ServerSeriesDropped, metricname.ServerSeriesDroppedHelp, with(labelReason), nil),
	}, infoValues
}
