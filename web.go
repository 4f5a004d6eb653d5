package main

import (
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/klauspost/compress/gzhttp"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/vllm-prober/vllm-prober/collector"
	"github.com/vllm-prober/vllm-prober/config"
	"github.com/vllm-prober/vllm-prober/probe/history"
	"github.com/vllm-prober/vllm-prober/probe/ledger"
	"github.com/vllm-prober/vllm-prober/probe/schedule"
	"github.com/vllm-prober/vllm-prober/status"
)

// maxResultsLimit bounds /api/v1/results?limit=.
const maxResultsLimit = 1000

// routes returns the daemon's HTTP handler.
func (d *daemon) routes() http.Handler {
	mux := http.NewServeMux()
	mux.Handle(d.flags.telemetryPath, fastGzip(collector.MetricsHandler(d.reg, promhttp.HandlerOpts{
		EnableOpenMetrics:  true,
		ErrorLog:           errorLogger{d.logger},
		DisableCompression: true,
	})))
	mux.HandleFunc("/-/healthy", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, "Healthy")
	})
	mux.HandleFunc("/-/ready", d.handleReady)
	mux.HandleFunc("/-/reload", d.handleReload)
	mux.HandleFunc("/api/v1/results", d.handleResults)
	mux.HandleFunc("/probe", d.handleProbe)
	mux.HandleFunc("/pair", d.handlePair)
	mux.HandleFunc("/{$}", d.handleStatus)
	return mux
}

func (d *daemon) handleReady(w http.ResponseWriter, _ *http.Request) {
	select {
	case <-d.ready:
		fmt.Fprintln(w, "Ready")
	default:
		http.Error(w, "Not ready", http.StatusServiceUnavailable)
	}
}

func (d *daemon) handleReload(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost && r.Method != http.MethodPut {
		w.Header().Set("Allow", "POST, PUT")
		http.Error(w, "Only POST or PUT requests allowed", http.StatusMethodNotAllowed)
		return
	}
	if !d.flags.enableLifecycle {
		http.Error(w, "Lifecycle API is not enabled", http.StatusForbidden)
		return
	}
	if err := d.reload(); err != nil {
		http.Error(w, fmt.Sprintf("failed to reload config: %s", err), http.StatusInternalServerError)
		return
	}
	fmt.Fprintln(w, "Reloaded")
}

// pairParams reads target= and probe= and checks that each, when given,
// names a configured target or probe, and that both together name a pair
// the configuration runs (the target's probes list includes the probe).
func (d *daemon) pairParams(r *http.Request, required bool) (target, probeName string, err error) {
	cfg := d.safe.Get()
	target, probeName = r.URL.Query().Get("target"), r.URL.Query().Get("probe")
	if required && (target == "" || probeName == "") {
		return "", "", errors.New("target and probe parameters are required")
	}
	tg, ok := cfg.Target(target)
	if target != "" && !ok {
		return "", "", fmt.Errorf("unknown target %q", truncate(target, 64))
	}
	if _, ok := cfg.Probe(probeName); probeName != "" && !ok {
		return "", "", fmt.Errorf("unknown probe %q", truncate(probeName, 64))
	}
	if target != "" && probeName != "" && !slices.ContainsFunc(cfg.ProbesFor(tg), func(p config.Probe) bool { return p.Name == probeName }) {
		return "", "", fmt.Errorf("probe %q is not paired with target %q: the target's probes list does not include it", probeName, target)
	}
	return target, probeName, nil
}

func (d *daemon) handleResults(w http.ResponseWriter, r *http.Request) {
	target, probeName, err := d.pairParams(r, false)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	limit := 100
	if s := r.URL.Query().Get("limit"); s != "" {
		limit, err = strconv.Atoi(s)
		if err != nil || limit < 1 || limit > maxResultsLimit {
			http.Error(w, fmt.Sprintf("limit must be an integer from 1 to %d", maxResultsLimit), http.StatusBadRequest)
			return
		}
	}
	// No replica: the static target's or gateway's records only, as
	// before fleets; replica=* adds every replica's (docs/design.md, Fleets).
	replica, err := replicaParam(r, true)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	recs := d.history.RecentOf(history.Match{Target: target, Probe: probeName, Replica: replica}, limit)
	if recs == nil {
		recs = []ledger.Record{}
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"status": "success", "data": recs})
}

func (d *daemon) handleProbe(w http.ResponseWriter, r *http.Request) {
	key, err := d.pairKeyParams(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	// The server listens before probing starts: wait for the engine to
	// run the configured pairs rather than call them unknown.
	select {
	case <-d.ready:
	case <-r.Context().Done():
		return
	}
	cfg := d.safe.Get()
	p, _ := cfg.Probe(key.Probe)
	if wt := d.flags.webLimits.writeTimeout; wt > 0 {
		// The request may take the probe's timeout before anything is written.
		_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(time.Duration(p.Timeout) + wt))
	}
	ctx := r.Context()
	res, err := d.engine.ProbeOnce(ctx, key)
	if err != nil {
		status := http.StatusInternalServerError
		if errors.Is(err, schedule.ErrUnknownPair) {
			status = http.StatusBadRequest
		}
		http.Error(w, err.Error(), status)
		return
	}
	reg := collector.ResultRegistry(res, p)
	promhttp.HandlerFor(reg, promhttp.HandlerOpts{}).ServeHTTP(w, r)
}

func (d *daemon) handleStatus(w http.ResponseWriter, r *http.Request) {
	cfg := d.safe.Get()
	page := status.Page{
		Version:     buildSummary(),
		Now:         time.Now(),
		Window:      d.tracker.Window(),
		MetricsPath: d.flags.telemetryPath,
		Pairs:       d.tracker.Snapshot(),
		Failures:    d.history.LastFailures("", "", 10),
		LedgerOK:    d.ledger.Healthy(),
		LedgerErr:   d.ledger.WriteErrors(),
	}
	page.LedgerReopens = d.ledger.Reopens()
	for _, t := range cfg.Targets {
		page.Targets = append(page.Targets, d.targetRows(t)...)
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	if err := status.Render(w, page); err != nil {
		d.logger.Error("Error rendering status page", "err", err)
	}
}

// handlePair serves the detail page of one (target, probe) pair.
func (d *daemon) handlePair(w http.ResponseWriter, r *http.Request) {
	// The replica names a discovered replica's pair; the engine's set
	// decides whether it runs, so an unknown one is "not running".
	key, err := d.pairKeyParams(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	target, probeName, replica := key.Target, key.Probe, key.Replica
	tg, _ := d.safe.Get().Target(target)
	if replica != "" && tg.Discovery == nil {
		// A static target never has replicas: no such pair will ever run.
		http.Error(w, fmt.Sprintf("target %q has no discovery, so no replicas: leave out replica, got %q", target, truncate(replica, 64)), http.StatusBadRequest)
		return
	}
	if replica == "" && tg.URL == "" {
		http.Error(w, fmt.Sprintf("target %q has no gateway (url), only replicas: add replica=host:port, one of %v", target, d.fleet.probed(tg)), http.StatusBadRequest)
		return
	}
	stats, recent, ok := d.tracker.Pair(key)
	if !ok {
		// Configured but not (yet) run by the engine: before the first
		// apply, a reload in progress, or a replica not discovered.
		http.Error(w, fmt.Sprintf("probe %q of target %q (replica %q) is not running", probeName, target, replica), http.StatusServiceUnavailable)
		return
	}
	now, scrape := time.Now(), d.scraper.State(target, replica)
	page := status.PairPage{
		Version:  buildSummary(),
		Now:      now,
		Stats:    stats,
		Recent:   recent,
		Failures: d.history.LastFailuresOf(history.Match{Target: target, Probe: probeName, Replica: replica}, 20),
		Target:   status.TargetState{Name: target, Replica: replica, Scrape: scrape},
		// A gateway's page links its replicas' pages.
		Replicas: d.gatewayReplicas(tg, replica),
		// Over the client's window; the model is the target's, as its
		// target_info reports it.
		ServerTTFT: d.scraper.ServerTTFT(target, replica, scrape.Model, now.Add(-stats.Window), now),
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	if err := status.RenderPair(w, page); err != nil {
		d.logger.Error("Error rendering pair page", "err", err)
	}
}

// targetRows are t's rows on the status page: the target (or its
// gateway), then each replica it probes; the first row holds the state of
// its discovery.
func (d *daemon) targetRows(t config.Target) []status.TargetState {
	var rows []status.TargetState
	if t.URL != "" || t.Discovery == nil {
		rows = append(rows, status.TargetState{Name: t.Name, Scrape: d.scraper.State(t.Name, "")})
	}
	for _, addr := range d.fleet.probed(t) {
		rows = append(rows, status.TargetState{Name: t.Name, Replica: addr, Scrape: d.scraper.State(t.Name, addr)})
	}
	if st := d.fleet.state(t.Name); st != nil {
		if len(rows) == 0 {
			rows = append(rows, status.TargetState{Name: t.Name})
		}
		rows[0].Discovery = st
	}
	return rows
}

// gatewayReplicas returns the replicas probed behind t's gateway when
// replica is "" (the gateway's pair), none for a replica's pair.
func (d *daemon) gatewayReplicas(t config.Target, replica string) []string {
	if replica != "" {
		return nil
	}
	return d.fleet.probed(t)
}

// pairKeyParams reads the one pair that target=, probe= (both required,
// as pairParams checks them) and replica= (a host:port, or "" for a
// static target or a gateway) name.
func (d *daemon) pairKeyParams(r *http.Request) (config.PairKey, error) {
	target, probeName, err := d.pairParams(r, true)
	if err != nil {
		return config.PairKey{}, err
	}
	replica, err := replicaParam(r, false)
	if err != nil {
		return config.PairKey{}, err
	}
	return config.PairKey{Target: target, Probe: probeName, Replica: replica}, nil
}

// replicaParam returns the request's replica parameter: "" (a static
// target or a gateway), a discovered replica's host:port, or, when any,
// history.AnyReplica ("*": every pair of the target and probe).
func replicaParam(r *http.Request, orAny bool) (string, error) {
	replica := r.URL.Query().Get("replica")
	if replica == "" || orAny && replica == history.AnyReplica {
		return replica, nil
	}
	if _, _, err := net.SplitHostPort(replica); err != nil || len(replica) > 300 {
		want := "a host:port"
		if orAny {
			want += " or *"
		}
		return "", fmt.Errorf("replica must be %s, got %q", want, truncate(replica, 64))
	}
	return replica, nil
}

// truncate bounds user input echoed in error messages.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// fastGzip compresses h's answers at gzip.BestSpeed for clients that
// accept gzip, as Prometheus does. promhttp compresses at the default
// level, which for the ~4 MB text of 1,000 pairs costs as much CPU as
// gathering and encoding it; the fastest level takes half that for a
// ~10% larger answer (docs/BENCHMARKS.md, "1,000 pairs on one prober").
// klauspost/compress's gzhttp does the negotiation (q-values, Vary, no
// gzip for tiny answers).
func fastGzip(h http.Handler) http.Handler {
	wrap, err := gzhttp.NewWrapper(gzhttp.CompressionLevel(gzip.BestSpeed))
	if err != nil {
		// Only an invalid option fails, and the level is a constant: keep
		// serving, at the default level.
		return gzhttp.GzipHandler(h)
	}
	return wrap(h)
}

// errorLogger adapts slog to promhttp's error log.
type errorLogger struct {
	logger interface{ Error(string, ...any) }
}

func (l errorLogger) Println(v ...any) {
	l.logger.Error("Error serving metrics", "err", fmt.Sprint(v...))
}
