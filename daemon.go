package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/exporter-toolkit/web"

	"github.com/vllm-prober/vllm-prober/collector"
	"github.com/vllm-prober/vllm-prober/collector/server"
	"github.com/vllm-prober/vllm-prober/config"
	"github.com/vllm-prober/vllm-prober/internal/httpclient"
	"github.com/vllm-prober/vllm-prober/probe"
	"github.com/vllm-prober/vllm-prober/probe/client"
	"github.com/vllm-prober/vllm-prober/probe/history"
	"github.com/vllm-prober/vllm-prober/probe/ledger"
	"github.com/vllm-prober/vllm-prober/probe/schedule"
	"github.com/vllm-prober/vllm-prober/status"
)

// daemon wires configuration, engine, collectors and the HTTP server.
type daemon struct {
	logger  *slog.Logger
	flags   *daemonFlags
	safe    *config.SafeConfig
	ledger  *ledger.Ledger
	history *history.History
	tracker *status.Tracker
	coll    *collector.Collector
	scraper *server.ServerScraper
	fleet   *fleet
	self    *collector.SelfMetrics
	engine  *schedule.Engine
	reg     prometheus.Gatherer // what /metrics serves: the registry's and the collector's families

	reloadMu sync.Mutex // serialises reloads from SIGHUP and HTTP
	// applyMu orders a reload's apply against shutdown: once stopped, a
	// reload that was still reading the file applies nothing.
	applyMu sync.Mutex
	stopped bool
	ready   chan struct{}
}

// daemonHooks lets demo observe a running daemon.
type daemonHooks struct {
	// listening is called with the bound addresses once the server listens.
	listening func(addrs []net.Addr)
	// started is called once probing has started.
	started func(d *daemon)
	// drained is called at shutdown once every offered request has ended
	// and reached the engine's sinks (metrics, status, ledger, history).
	drained func(d *daemon)
	// newSource builds the replica source of a discovery target; nil =
	// discovery.New.
	newSource newReplicaSource
}

// runDaemon runs until ctx ends, then shuts down gracefully.
func runDaemon(ctx context.Context, logger *slog.Logger, f *daemonFlags, hooks daemonHooks) error {
	safe := &config.SafeConfig{}
	if _, err := safe.Reload(f.configFile); err != nil {
		return fmt.Errorf("load config: %w", err)
	}
	d, err := newDaemon(logger, f, safe, hooks.newSource)
	if err != nil {
		return err
	}
	defer d.closeLedger()

	lns, err := listen(f.web)
	if err == nil {
		lns, err = limitListeners(lns, f.webLimits)
	}
	if err != nil {
		return err
	}
	addrs := make([]net.Addr, len(lns))
	for i, l := range lns {
		addrs[i] = l.Addr()
		logger.Info("Listening", "address", l.Addr().String())
	}
	srv := newWebServer(d.routes(), f.webLimits)
	srvErr := make(chan error, 1)
	go func() { srvErr <- web.ServeMultiple(lns, srv, f.web, logger) }()
	if hooks.listening != nil {
		hooks.listening(addrs)
	}

	d.applyMu.Lock()
	if err := d.apply(safe.Get()); err != nil {
		logger.Error("Some probes could not start", "err", err)
	}
	d.applyMu.Unlock()
	close(d.ready)
	if hooks.started != nil {
		hooks.started(d)
	}
	logger.Info("Probing started", "targets", len(safe.Get().Targets), "probes", len(safe.Get().Probes), "run_id", ledger.RunID())

	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	reloads := d.reloader(ctx)
	for {
		select {
		case <-hup:
			select {
			case reloads <- struct{}{}:
			default: // a reload is already due; it reads the newest file
			}
		case err := <-srvErr:
			d.shutdown()
			return fmt.Errorf("http server: %w", err)
		case <-ctx.Done():
			logger.Info("Shutting down")
			d.shutdown()
			if hooks.drained != nil {
				hooks.drained(d)
			}
			sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = srv.Shutdown(sctx)
			return nil
		}
	}
}

// reloader runs SIGHUP reloads off the signal loop until ctx ends, so a
// reload that hangs (a file on a stuck mount) never delays SIGTERM. Signals
// that arrive during a reload are coalesced into one more.
func (d *daemon) reloader(ctx context.Context) chan<- struct{} {
	reloads := make(chan struct{}, 1)
	go func() {
		for {
			select {
			case <-reloads:
				_ = d.reload()
			case <-ctx.Done():
				return
			}
		}
	}()
	return reloads
}

func newDaemon(logger *slog.Logger, f *daemonFlags, safe *config.SafeConfig, newSource newReplicaSource) (*daemon, error) {
	cfg := safe.Get()
	lg, err := ledger.Open(cfg.Global.Ledger, logger)
	if err != nil {
		return nil, err // ledger.Open names the ledger
	}
	d := &daemon{
		logger:  logger,
		flags:   f,
		safe:    safe,
		ledger:  lg,
		history: history.New(cfg.Global.HistoryLimit),
		tracker: status.NewTracker(status.TrackerOptions{}),
		coll:    collector.New(collector.Options{Logger: logger}),
		scraper: server.NewServerScraper(server.ScraperOptions{Logger: logger, MaxSeriesPerTarget: f.maxServerSeries, UserAgent: userAgent()}),
		ready:   make(chan struct{}),
	}
	if newSource == nil {
		newSource = newDiscoverer(f.dnsServer)
	}
	discoveryMetrics := collector.NewDiscoveryMetrics()
	d.fleet = newFleet(logger, newSource, discoveryMetrics, d.replicasChanged)
	d.self = collector.NewSelfMetrics(func() float64 { return float64(lg.WriteErrors()) })
	d.self.SetReload(true, time.Now())
	clients := new(client.Pool) // the probes of a target share its connections
	d.engine = schedule.NewEngine(schedule.EngineOptions{
		Logger: logger,
		Sinks:  []probe.Sink{d.coll, d.tracker, lg, d.history, d.scraper},
		NewRequester: func(t config.Target, p config.Probe) (schedule.Sender, error) {
			return client.New(t, p, client.Options{Logger: logger, UserAgent: userAgent(), Clients: clients})
		},
	})
	reg := prometheus.NewRegistry()
	reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		d.scraper, d.self, discoveryMetrics,
	)
	// The probe series, most of a large prober's, are gathered directly
	// (collector.Collector.Gather).
	d.reg = collector.Join(reg, d.coll)
	return d, nil
}

// userAgent names the prober and its version in requests to targets.
func userAgent() string { return httpclient.UserAgent() }

// listen opens every --web.listen-address, so the bound port is known
// (":0" picks a free one) before serving.
func listen(f *web.FlagConfig) ([]net.Listener, error) {
	var lns []net.Listener
	for _, addr := range *f.WebListenAddresses {
		l, err := net.Listen("tcp", addr)
		if err != nil {
			for _, o := range lns {
				o.Close()
			}
			return nil, fmt.Errorf("listen on %s: %w", addr, err)
		}
		lns = append(lns, l)
	}
	if len(lns) == 0 {
		return nil, errors.New("no --web.listen-address given")
	}
	return lns, nil
}

// apply makes cfg the running configuration; d.applyMu is held. The
// engine owns the pairs and tells its sinks, the server scraper included
// (docs/design.md, Pair lifecycle); the scraper's settings apply to
// whichever targets run, so neither call depends on the other. The fleet
// runs the discovery of cfg's targets, and the pairs are those of its
// current replicas.
func (d *daemon) apply(cfg *config.Config) error {
	d.scraper.Configure(cfg.Global.ServerMetrics)
	d.fleet.configure(cfg, configDir(d.flags.configFile))
	return d.engine.ApplyPairs(d.fleet.pairs(cfg))
}

// replicasChanged applies the pairs of a discovery target's new replica
// set; under d.applyMu, so the last apply always holds the newest sets.
func (d *daemon) replicasChanged() {
	d.applyMu.Lock()
	defer d.applyMu.Unlock()
	if d.stopped {
		return
	}
	if err := d.engine.ApplyPairs(d.fleet.pairs(d.safe.Get())); err != nil {
		d.logger.Error("Some replica probes could not start", "err", err)
	}
}

// configDir is the directory relative paths of the config file are taken
// from, as config.Parse takes them.
func configDir(file string) string {
	if dir, err := filepath.Abs(filepath.Dir(file)); err == nil {
		return dir
	}
	return filepath.Dir(file)
}

// reload re-reads the config file; a failed reload keeps the running one.
func (d *daemon) reload() error {
	d.reloadMu.Lock()
	defer d.reloadMu.Unlock()
	old := d.safe.Get()
	changed, err := d.safe.Reload(d.flags.configFile)
	if err != nil {
		d.self.SetReload(false, time.Now())
		d.logger.Error("Error reloading config", "err", err)
		return err
	}
	d.self.SetReload(true, time.Now())
	if !changed {
		// Debug: a reloader that sends SIGHUP on a timer would flood the log.
		d.logger.Debug("Config unchanged, nothing to reload")
		return nil
	}
	d.applyMu.Lock()
	defer d.applyMu.Unlock()
	if d.stopped {
		return errors.New("shutting down, reloaded config not applied")
	}
	cfg := d.safe.Get()
	if cfg.Global.Ledger != old.Global.Ledger || cfg.Global.HistoryLimit != old.Global.HistoryLimit {
		d.logger.Warn("Ledger and history_limit changes take effect at restart; keeping the running ones")
	}
	if err := d.apply(cfg); err != nil {
		d.logger.Error("Some probes could not start after reload", "err", err)
	}
	d.logger.Info("Reloaded config", "file", d.flags.configFile)
	return nil
}

func (d *daemon) shutdown() {
	d.applyMu.Lock()
	d.stopped = true
	d.applyMu.Unlock()
	d.fleet.stop()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := d.engine.Shutdown(ctx); err != nil {
		d.logger.Warn("Engine shutdown incomplete", "err", err)
	}
	d.scraper.Stop()
}

func (d *daemon) closeLedger() {
	if err := d.ledger.Close(); err != nil {
		d.logger.Error("Error closing ledger", "err", err)
	}
}
