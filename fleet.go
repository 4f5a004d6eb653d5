package main

import (
	"context"
	"log/slog"
	"net"
	"reflect"
	"slices"
	"sync"
	"time"

	"github.com/vllm-prober/vllm-prober/collector"
	"github.com/vllm-prober/vllm-prober/config"
	"github.com/vllm-prober/vllm-prober/discovery"
	"github.com/vllm-prober/vllm-prober/status"
)

// replicaSource keeps one target's replica set current: Run calls update
// with the full sorted set after each change, fail with each failed
// refresh (the last good set stays) and unchanged with each successful
// refresh that found the last set again, until ctx ends.
// *discovery.Discoverer is the production one.
type replicaSource interface {
	Run(ctx context.Context, update func([]discovery.Replica), fail func(error), unchanged func())
	Mechanism() string
}

// newReplicaSource builds the source of one target's discovery; baseDir is
// the configuration file's directory (file_sd globs are relative to it).
type newReplicaSource func(c discovery.Config, baseDir string, logger *slog.Logger) (replicaSource, error)

// fleet runs one replica source per target with discovery and keeps each
// target's current replicas; every change calls changed, which recomputes
// the pairs and applies them to the engine (docs/design.md, Fleets).
type fleet struct {
	logger    *slog.Logger
	newSource newReplicaSource
	metrics   *collector.DiscoveryMetrics
	now       func() time.Time
	changed   func() // called without fleet.mu held, from the sources' goroutines

	mu      sync.Mutex
	targets map[string]*fleetTarget
	running sync.WaitGroup
}

// fleetTarget is one discovery target's source and what it last found.
type fleetTarget struct {
	target   config.Target // its max_replicas may change with its source kept
	cfg      discovery.Config
	cancel   context.CancelFunc
	replicas []discovery.Replica // nil before the first update
	state    status.DiscoveryState
}

func newFleet(logger *slog.Logger, newSource newReplicaSource, metrics *collector.DiscoveryMetrics, changed func()) *fleet {
	return &fleet{logger: logger, newSource: newSource, metrics: metrics, now: time.Now, changed: changed, targets: map[string]*fleetTarget{}}
}

// configure runs a source for every target of cfg with discovery: a
// target whose discovery config is unchanged keeps its source and
// replicas; a changed one gets a new source and keeps its last set until
// that source's first update; the sources of targets gone or without
// discovery stop, and their replicas go. It does not wait for stopped
// sources: their late calls are ignored.
func (f *fleet) configure(cfg *config.Config, baseDir string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	wanted := map[string]bool{}
	for _, t := range cfg.Targets {
		if t.Discovery == nil {
			continue
		}
		wanted[t.Name] = true
		old := f.targets[t.Name]
		if old != nil && reflect.DeepEqual(old.cfg, *t.Discovery) {
			old.target = t
			continue
		}
		src, err := f.newSource(*t.Discovery, baseDir, f.logger.With("target", t.Name))
		if err != nil {
			// The config validated the block; a source that still cannot
			// be built is shown as a failing discovery, not ignored.
			f.logger.Error("Cannot start replica discovery", "target", t.Name, "err", err)
			ft := &fleetTarget{target: t, cfg: *t.Discovery, cancel: func() {}}
			if old != nil {
				old.cancel()
				ft.replicas = old.replicas
			}
			ft.state = status.DiscoveryState{Mechanism: t.Discovery.Mechanism(), Err: err.Error(), ErrAt: f.now()}
			f.targets[t.Name] = ft
			f.metrics.Start(t.Name, t.Discovery.Mechanism())
			f.metrics.Failed(t.Name)
			continue
		}
		f.start(t, src, old)
	}
	for name, ft := range f.targets {
		if !wanted[name] {
			ft.cancel()
			delete(f.targets, name)
			f.metrics.Forget(name)
		}
	}
}

// start runs src for t in place of old (nil: none); f.mu is held.
func (f *fleet) start(t config.Target, src replicaSource, old *fleetTarget) {
	target := t.Name
	ctx, cancel := context.WithCancel(context.Background())
	ft := &fleetTarget{target: t, cfg: *t.Discovery, cancel: cancel, state: status.DiscoveryState{Mechanism: src.Mechanism()}}
	if old != nil {
		old.cancel()
		ft.replicas = old.replicas
	}
	f.targets[target] = ft
	f.metrics.Start(target, src.Mechanism())
	f.logger.Info("Replica discovery started", "target", target, "mechanism", src.Mechanism())
	f.running.Add(1)
	go func() {
		defer f.running.Done()
		src.Run(ctx,
			func(rs []discovery.Replica) { f.update(target, ft, rs) },
			func(err error) { f.fail(target, ft, err) },
			func() { f.unchanged(target, ft) })
	}()
}

// update stores the set ft's source found, if ft still runs, records what
// it probes and leaves out (the gauge; the dropped counter, logged when
// the number beyond max_replicas changes) and tells changed when the set
// differs from the last one.
func (f *fleet) update(target string, ft *fleetTarget, rs []discovery.Replica) {
	f.mu.Lock()
	if f.targets[target] != ft {
		f.mu.Unlock()
		return
	}
	same := ft.replicas != nil && slices.EqualFunc(ft.replicas, rs, sameReplica)
	ft.replicas = slices.Clone(rs)
	if ft.replicas == nil {
		ft.replicas = []discovery.Replica{}
	}
	kept := len(config.KeptReplicas(ft.target, ft.replicas))
	dropped := len(ft.replicas) - kept
	if dropped > 0 && dropped != ft.state.Dropped {
		f.logger.Warn("Replicas beyond max_replicas are not probed", "target", target, "found", len(ft.replicas), "max_replicas", ft.target.MaxReplicas, "dropped", dropped)
	}
	if !same {
		f.logger.Info("Replica set changed", "target", target, "replicas", kept)
	}
	ft.state.Replicas, ft.state.Dropped, ft.state.Updated, ft.state.Err = kept, dropped, f.now(), ""
	f.metrics.Updated(target, kept, dropped)
	f.mu.Unlock()
	if !same {
		f.changed()
	}
}

// fail records a failed refresh of ft's source, if ft still runs.
func (f *fleet) fail(target string, ft *fleetTarget, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.targets[target] != ft {
		return
	}
	if ft.state.Err == "" {
		f.logger.Warn("Replica discovery failing, keeping the last set", "target", target, "mechanism", ft.state.Mechanism, "err", err)
	}
	ft.state.Err, ft.state.ErrAt = err.Error(), f.now()
	f.metrics.Failed(target)
}

// unchanged records a successful refresh of ft's source that found its
// last set again, if ft still runs: the state's last refresh is now and a
// failure before it is over (status.DiscoveryState).
func (f *fleet) unchanged(target string, ft *fleetTarget) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.targets[target] != ft {
		return
	}
	if ft.state.Err != "" {
		f.logger.Info("Replica discovery recovered", "target", target, "mechanism", ft.state.Mechanism)
	}
	ft.state.Updated, ft.state.Err = f.now(), ""
}

// sameReplica compares replicas by address and labels.
func sameReplica(a, b discovery.Replica) bool {
	return a.Addr == b.Addr && reflect.DeepEqual(a.Labels, b.Labels)
}

// pairs resolves cfg's pairs with the current replicas (those of a
// reload's max_replicas, counted again in the gauge).
func (f *fleet) pairs(cfg *config.Config) []config.Pair {
	f.mu.Lock()
	defer f.mu.Unlock()
	sets := make(map[string][]discovery.Replica, len(f.targets))
	for _, t := range cfg.Targets {
		if ft := f.targets[t.Name]; ft != nil && t.Discovery != nil && ft.replicas != nil {
			sets[t.Name] = ft.replicas
			kept := len(config.KeptReplicas(t, ft.replicas))
			ft.state.Replicas, ft.state.Dropped = kept, len(ft.replicas)-kept
			f.metrics.Updated(t.Name, kept, 0)
		}
	}
	return cfg.PairsWith(sets)
}

// state returns the discovery state of target, nil when it has none.
func (f *fleet) state(target string) *status.DiscoveryState {
	f.mu.Lock()
	defer f.mu.Unlock()
	if ft := f.targets[target]; ft != nil {
		st := ft.state
		return &st
	}
	return nil
}

// probed returns the addresses of the replicas of t that are probed.
func (f *fleet) probed(t config.Target) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	ft := f.targets[t.Name]
	if ft == nil {
		return nil
	}
	var out []string
	for _, r := range config.KeptReplicas(t, ft.replicas) {
		out = append(out, r.Addr)
	}
	return out
}

// stop stops every source and waits for them.
func (f *fleet) stop() {
	f.mu.Lock()
	for name, ft := range f.targets {
		ft.cancel()
		delete(f.targets, name)
	}
	f.mu.Unlock()
	f.running.Wait()
}

// newDiscoverer returns the production newReplicaSource; dnsServer, when
// not "", is the host:port of the only DNS server dns discovery asks (the
// hidden flag --discovery.dns-server, for tests), else the system's.
func newDiscoverer(dnsServer string) newReplicaSource {
	var resolver *net.Resolver
	if dnsServer != "" {
		resolver = &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, network, dnsServer)
		}}
	}
	return func(c discovery.Config, baseDir string, logger *slog.Logger) (replicaSource, error) {
		return discovery.New(c, discovery.Options{BaseDir: baseDir, Logger: logger, Resolver: resolver})
	}
}
