// Package server scrapes each target's own /metrics (vLLM's vllm:* families)
// in the background and re-exposes them with a target label, with the
// target's model and version on vllm_probe_target_info; it keeps the
// server's TTFT histograms for the /pair page (docs/design.md, Status page).
package server

import (
	"context"
	"fmt"
	"log/slog"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/vllm-prober/vllm-prober/config"
	"github.com/vllm-prober/vllm-prober/internal/logonce"
	"github.com/vllm-prober/vllm-prober/internal/redact"
	"github.com/vllm-prober/vllm-prober/probe"
	"github.com/vllm-prober/vllm-prober/probe/client"
)

// Label names of the scraper's own series and of the target info series.
const (
	labelTarget        = "target"
	labelReplica       = "replica"
	labelReason        = "reason"
	labelModel         = "model"
	labelServerVersion = "server_version"
)

// Defaults of ScraperOptions. An unset server_metrics config takes
// config.DefaultGlobal's.
const (
	DefaultMaxSeriesPerTarget = 10000
	DefaultMaxBodyBytes       = 32 << 20
)

// ScraperOptions configures a ServerScraper.
type ScraperOptions struct {
	Logger *slog.Logger
	// Now is the clock for ScrapeState.Last and scrape durations; nil = time.Now.
	Now func() time.Time
	// NewTicker returns a channel that delivers a tick every d and a function
	// that stops it; nil uses time.NewTicker. Tests inject a manual ticker.
	NewTicker func(d time.Duration) (<-chan time.Time, func())
	// MaxSeriesPerTarget caps the series re-exported per target (a
	// histogram or summary counts once); 0 = DefaultMaxSeriesPerTarget.
	MaxSeriesPerTarget int
	// MaxBodyBytes bounds one /metrics response; 0 = DefaultMaxBodyBytes.
	MaxBodyBytes int64
	// UserAgent is sent with every request; "" = client.DefaultUserAgent.
	UserAgent string
}

// ScrapeState is the server scrape state of one target, for the status page.
type ScrapeState struct {
	Success       bool      // the last /metrics scrape succeeded
	Last          time.Time // when the last scrape ended; zero before the first
	Err           string    // why the last scrape failed; "" on success
	Model         string    // configured model, or the first id of /v1/models
	ServerVersion string    // from /version; "" until known
	Duration      time.Duration
	Series        int // series re-exported from the last scrape
}

// ServerScraper scrapes each target's own /metrics in the background (never
// at our scrape time, so /metrics stays fast) and re-exposes the allowed
// families with their own names plus a target label. It implements
// prometheus.Collector as an unchecked collector, since the families it
// exports depend on the servers, and probe.Sink: it scrapes the target of
// every pair the engine runs, while at least one of its pairs runs, with
// the settings of Configure (docs/design.md, Pair lifecycle).
type ServerScraper struct {
	opts   ScraperOptions
	logger *slog.Logger
	warned logonce.Set

	// onPublish, when set (tests), is called with s.mu held after every
	// published scrape.
	onPublish func(target string)

	mu       sync.RWMutex
	settings scrapeSettings
	pairs    map[scrapeKey]map[string]bool // running probes by target and replica
	loops    map[scrapeKey]*targetLoop
	running  sync.WaitGroup // every loop goroutine, retired ones included
	stopped  bool
	// allow is the last compiled allow regexp, which every loop started
	// with the same source shares: every loop has the settings' one, and a
	// compiled copy per target was ~26 KB (100 targets: 2.6 MB).
	allow *regexp.Regexp
}

// scrapeSettings is how every target is scraped (global.server_metrics,
// with defaults for unset fields).
type scrapeSettings struct {
	interval time.Duration
	timeout  time.Duration
	allow    string
}

// scrapeKey names one scraped server: a static target or gateway (replica
// ""), or one discovered replica of a target.
type scrapeKey struct{ target, replica string }

// loopConfig is everything a target's scrape loop depends on; a loop is
// restarted only when it changes.
type loopConfig struct {
	target  config.Target // a replica's: URL is the replica's
	replica string
	labels  map[string]string // the replica's discovery labels, for target_info
	scrapeSettings
}

// key names the server the loop scrapes.
func (c loopConfig) key() scrapeKey { return scrapeKey{c.target.Name, c.replica} }

// ownLabels are the label names and values every series of the loop's
// server gets: target, and replica for a replica.
func (c loopConfig) ownLabels() (names, values []string) {
	if c.replica == "" {
		return []string{labelTarget}, []string{c.target.Name}
	}
	return []string{labelTarget, labelReplica}, []string{c.target.Name, c.replica}
}

// targetLoop is one target's scrape goroutine and what it last published.
type targetLoop struct {
	cfg        loopConfig
	descs      loopDescs
	infoValues []string // the replica's discovery label values, after model and server_version
	allow      *regexp.Regexp
	cancel     context.CancelFunc
	parsing    atomic.Bool // an OpenMetrics parse is running (see decodeOpenMetrics)

	// Guarded by ServerScraper.mu.
	state    ScrapeState
	attempts int // metrics scrapes attempted
	families []*family
	dropped  map[string]float64
	ttft     []ttftSnapshot // successful scrapes of the last hour (ServerTTFT)
}

var (
	_ prometheus.Collector = (*ServerScraper)(nil)
	_ probe.Sink           = (*ServerScraper)(nil)
)

// NewServerScraper returns a scraper with no targets and the default
// settings; the engine starts its pairs (probe.Sink).
func NewServerScraper(o ScraperOptions) *ServerScraper {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.NewTicker == nil {
		o.NewTicker = func(d time.Duration) (<-chan time.Time, func()) {
			t := time.NewTicker(d)
			return t.C, t.Stop
		}
	}
	if o.MaxSeriesPerTarget <= 0 {
		o.MaxSeriesPerTarget = DefaultMaxSeriesPerTarget
	}
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if o.UserAgent == "" {
		o.UserAgent = client.DefaultUserAgent
	}
	s := &ServerScraper{opts: o, logger: o.Logger, warned: logonce.Set{Max: 1024}, settings: settingsOf(config.ServerMetrics{}),
		pairs: map[scrapeKey]map[string]bool{}, loops: map[scrapeKey]*targetLoop{}}
	return s
}

// start launches one loop; s.mu is held.
func (s *ServerScraper) start(w loopConfig) *targetLoop {
	allow := s.allowRegexp(w.allow)
	ctx, cancel := context.WithCancel(context.Background())
	l := &targetLoop{cfg: w, allow: allow, cancel: cancel, dropped: map[string]float64{}}
	l.descs, l.infoValues = newLoopDescs(w)
	if w.target.Model != "" {
		l.state.Model = w.target.Model
	}
	s.running.Add(1)
	go func() {
		defer s.running.Done()
		s.run(ctx, l)
	}()
	return l
}

// allowRegexp returns the allow regexp of src, the one of the loop
// started last when it had the same source (a regexp.Regexp is safe for
// concurrent use), or the default's when src does not compile; s.mu is
// held.
func (s *ServerScraper) allowRegexp(src string) *regexp.Regexp {
	if s.allow != nil && s.allow.String() == anchored(src) {
		return s.allow
	}
	allow, err := compileAllow(src)
	if err != nil {
		s.logger.Warn("invalid server_metrics.allow, using the default", "err", err)
		allow, _ = compileAllow(DefaultAllow)
	}
	s.allow = allow
	return allow
}

// anchored is src matching whole metric names only.
func anchored(src string) string { return "^(?:" + src + ")$" }

// compileAllow anchors src, whatever the config did: allow always matches
// whole metric names.
func compileAllow(src string) (*regexp.Regexp, error) {
	re, err := regexp.Compile(anchored(src))
	if err != nil {
		return nil, fmt.Errorf("compile allow regexp: %w", err)
	}
	return re, nil
}

// Stop stops every loop and waits for them, retired ones included; the
// scraper exports nothing afterwards and starts no loop.
func (s *ServerScraper) Stop() {
	s.mu.Lock()
	s.stopped = true
	for _, l := range s.loops {
		l.cancel()
	}
	s.loops = map[scrapeKey]*targetLoop{}
	s.mu.Unlock()
	s.running.Wait()
}

// State returns the scrape state of target, or of its discovered replica
// when replica is set (the zero value when unknown).
func (s *ServerScraper) State(target, replica string) ScrapeState {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if l, ok := s.loops[scrapeKey{target, replica}]; ok {
		return l.state
	}
	return ScrapeState{}
}

// others returns what every server except key's exports; s.mu is held.
func (s *ServerScraper) others(key scrapeKey) map[string]familyInfo {
	out := map[string]familyInfo{}
	for n, l := range s.loops {
		if n == key {
			continue
		}
		for _, f := range l.families {
			out[f.name] = familyInfo{f.typ, f.help}
		}
	}
	return out
}

// Describe implements prometheus.Collector. It sends nothing: the scraper
// is an unchecked collector.
func (s *ServerScraper) Describe(chan<- *prometheus.Desc) {}

// Collect implements prometheus.Collector.
func (s *ServerScraper) Collect(ch chan<- prometheus.Metric) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	for _, l := range s.loops {
		s.collectLoop(ch, l)
	}
}

func (s *ServerScraper) collectLoop(ch chan<- prometheus.Metric, l *targetLoop) {
	_, own := l.cfg.ownLabels()
	emit := func(desc *prometheus.Desc, typ prometheus.ValueType, v float64, labels ...string) {
		if m, err := prometheus.NewConstMetric(desc, typ, v, append(slices.Clone(own), labels...)...); err == nil {
			ch <- m
		}
	}
	if st := l.state; st.Model != "" || st.ServerVersion != "" {
		emit(l.descs.info, prometheus.GaugeValue, 1, append([]string{st.Model, st.ServerVersion}, l.infoValues...)...)
	}
	if l.cfg.target.MetricsPath == "" || l.attempts == 0 {
		return
	}
	success := 0.0
	if l.state.Success {
		success = 1
	}
	emit(l.descs.success, prometheus.GaugeValue, success)
	emit(l.descs.duration, prometheus.GaugeValue, l.state.Duration.Seconds())
	for _, reason := range dropReasons {
		emit(l.descs.dropped, prometheus.CounterValue, l.dropped[reason], reason)
	}
	for _, f := range l.families {
		for _, m := range f.metrics {
			ch <- serverMetric{desc: f.desc, m: m}
		}
	}
}

// publish records one scrape's outcome if l is still the live loop of its
// target (a stopped loop's late result is discarded).
func (s *ServerScraper) publish(l *targetLoop, res scrapeResult) {
	s.mu.Lock()
	defer s.mu.Unlock()
	name, key := l.cfg.target.Name, l.cfg.key()
	if s.loops[key] != l {
		return
	}
	if s.onPublish != nil {
		defer s.onPublish(name)
	}
	l.state.Last, l.state.Duration = res.end, res.end.Sub(res.start)
	if res.model != "" {
		l.state.Model = res.model
	}
	if res.version != "" {
		l.state.ServerVersion = res.version
	}
	if l.cfg.target.MetricsPath == "" {
		return
	}
	l.attempts++
	wasUp := l.attempts == 1 || l.state.Success
	l.families, l.state.Series, l.state.Success, l.state.Err = nil, 0, false, ""
	if res.err != nil {
		l.state.Err = redact.Text(res.err.Error()) // shown on the status page
		if wasUp {
			s.logger.Warn("server metrics scrape failed", "target", name, "replica", key.replica, "err", res.err)
		}
		return
	}
	names, values := l.cfg.ownLabels()
	b := newFamilyBuilder(names, values, l.allow, s.opts.MaxSeriesPerTarget, s.others(key))
	// Sorted, so the series cap and collisions always drop the same series.
	slices.SortFunc(res.families, func(a, b *dto.MetricFamily) int { return strings.Compare(a.GetName(), b.GetName()) })
	for _, mf := range res.families {
		b.add(mf)
	}
	l.families, l.state.Series, l.state.Success = b.out, b.series, true
	l.recordTTFT(res.end)
	if !wasUp {
		s.logger.Warn("server metrics scrape recovered", "target", name, "replica", key.replica)
	}
	for reason, n := range b.dropped {
		l.dropped[reason] += float64(n)
	}
	for _, n := range b.notes {
		if s.warned.First(name + "\x00" + key.replica + "\x00" + n.name + "\x00" + n.reason) {
			s.logger.Warn("dropping scraped server series", "target", name, "replica", key.replica, "metric", n.name, "reason", n.reason)
		}
	}
}

// scrapeResult is what one loop iteration learned, before publication.
type scrapeResult struct {
	start, end     time.Time
	families       []*dto.MetricFamily
	err            error
	model, version string
}
