package discovery

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/common/model"
)

// Options are what a Discoverer needs beyond its configuration.
type Options struct {
	// BaseDir is the directory relative file_sd globs are taken from: the
	// configuration file's directory.
	BaseDir string
	// Resolver looks up DNS names; nil means net.DefaultResolver.
	Resolver *net.Resolver
	// Logger receives the watcher's problems and each refresh at debug;
	// nil discards.
	Logger *slog.Logger
}

// Discoverer keeps one target's set of replicas current with one
// mechanism. Build it with New and run it with Run.
type Discoverer struct {
	mechanism string
	refresh   time.Duration
	src       source
	logger    *slog.Logger
}

// source is one mechanism: lookup returns the replicas found now, in an
// order that depends only on what was found (duplicates allowed).
type source interface {
	lookup(ctx context.Context) ([]Replica, error)
}

// watcher is a source that also notices changes between refreshes: watch
// calls changed for each one until ctx ends.
type watcher interface {
	// watch sets its watches up, calls watching, then calls changed after
	// each change until ctx ends.
	watch(ctx context.Context, watching, changed func())
}

// ConfigError is an invalid discovery block, as New reports it. The
// configuration package places it at Key's line.
type ConfigError struct {
	// Key is the key at fault, relative to the discovery block
	// ("dns.port", "file_sd.files[1]"); "" for the block itself.
	Key string
	// Err says what is wrong with it.
	Err error
}

func (e *ConfigError) Error() string {
	if e.Key == "" {
		return "discovery: " + e.Err.Error()
	}
	return "discovery." + e.Key + ": " + e.Err.Error()
}

func (e *ConfigError) Unwrap() error { return e.Err }

// invalid returns a *ConfigError; format may wrap an error with %w.
func invalid(key, format string, args ...any) error {
	return &ConfigError{Key: key, Err: fmt.Errorf(format, args...)}
}

// New checks c and builds its Discoverer. An invalid c gives a
// *ConfigError ("discovery.dns.port: ...").
func New(c Config, opts Options) (*Discoverer, error) {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Resolver == nil {
		opts.Resolver = net.DefaultResolver
	}
	set := 0
	for _, isSet := range []bool{c.DNS != nil, c.FileSD != nil, c.HTTPSD != nil} {
		if isSet {
			set++
		}
	}
	if set != 1 {
		return nil, invalid("", "set exactly one of dns, file_sd and http_sd (%d set)", set)
	}
	d := &Discoverer{mechanism: c.Mechanism()}
	d.logger = opts.Logger.With("mechanism", d.mechanism)
	var err error
	switch {
	case c.DNS != nil:
		d.src, d.refresh, err = newDNS(*c.DNS, opts.Resolver)
	case c.FileSD != nil:
		d.src, d.refresh, err = newFileSD(*c.FileSD, opts.BaseDir, d.logger)
	default:
		d.src, d.refresh, err = newHTTPSD(*c.HTTPSD)
	}
	if err != nil {
		return nil, err
	}
	return d, nil
}

// Mechanism returns the mechanism's name: MechanismDNS, MechanismFileSD or
// MechanismHTTPSD.
func (d *Discoverer) Mechanism() string { return d.mechanism }

// Run refreshes at once, then every refresh interval, and for file_sd also
// when a watched file changes, until ctx ends. After every successful
// refresh whose set differs from the last one reported (the first success
// is always reported, even when empty), it calls update with the whole
// set, merged and sorted (see merge); after every other successful
// refresh it calls unchanged, so the caller knows the refresh succeeded
// (a failure before it is over) without being handed the same set again.
// A failed refresh calls fail and keeps the last set: update is not
// called. The calls never overlap, and none comes after Run returns; Run
// returns once its goroutines ended.
func (d *Discoverer) Run(ctx context.Context, update func([]Replica), fail func(error), unchanged func()) {
	var wg sync.WaitGroup
	defer wg.Wait()
	changed := make(chan struct{}, 1) // changes that come during a refresh make one more
	if w, ok := d.src.(watcher); ok {
		// The first refresh waits for the watches, so a change made just
		// after it is seen, not left to the refresh interval.
		ready := make(chan struct{})
		watching := sync.OnceFunc(func() { close(ready) })
		wg.Go(func() {
			defer watching()
			w.watch(ctx, watching, func() {
				select {
				case changed <- struct{}{}:
				default:
				}
			})
		})
		select {
		case <-ready:
		case <-ctx.Done():
			return
		}
	}
	tick := time.NewTicker(d.refresh)
	defer tick.Stop()
	var last []Replica
	reported := false
	for {
		found, err := d.lookup(ctx)
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			d.logger.Debug("Discovery failed", "err", err)
			fail(err)
		case !reported || !equal(found, last):
			d.logger.Debug("Discovered replicas", "replicas", len(found))
			last, reported = found, true
			update(clone(found))
		default:
			unchanged()
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		case <-changed:
		}
	}
}

// lookup is one refresh, given at most the refresh interval.
func (d *Discoverer) lookup(ctx context.Context) ([]Replica, error) {
	ctx, cancel := context.WithTimeout(ctx, d.refresh)
	defer cancel()
	found, err := d.src.lookup(ctx)
	if errors.Is(err, context.DeadlineExceeded) && ctx.Err() != nil {
		err = fmt.Errorf("%w (refresh took longer than the %s refresh interval)", err, d.refresh)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", d.mechanism, err)
	}
	return merge(found), nil
}

// merge returns found with one Replica per Addr, sorted by Addr as
// strings. A replica found more than once gets the labels of all its
// occurrences; where they disagree on a label's value, the first
// occurrence wins (file_sd: files in lexical order of path, then groups in
// file order; http_sd: groups in answer order). An empty label set is nil.
func merge(found []Replica) []Replica {
	at := make(map[string]int, len(found))
	out := make([]Replica, 0, len(found))
	for _, r := range found {
		i, seen := at[r.Addr]
		if !seen {
			at[r.Addr] = len(out)
			out = append(out, Replica{Addr: r.Addr})
			i = len(out) - 1
		}
		for name, value := range r.Labels {
			if _, had := out[i].Labels[name]; had {
				continue
			}
			if out[i].Labels == nil {
				out[i].Labels = map[string]string{}
			}
			out[i].Labels[name] = value
		}
	}
	slices.SortFunc(out, func(a, b Replica) int { return strings.Compare(a.Addr, b.Addr) })
	return out
}

// equal tells whether two merged sets are the same.
func equal(a, b []Replica) bool {
	return slices.EqualFunc(a, b, func(x, y Replica) bool {
		return x.Addr == y.Addr && maps.Equal(x.Labels, y.Labels)
	})
}

// refreshOf is the configured refresh interval, or the mechanism's
// default when none is set.
func refreshOf(configured, def model.Duration) time.Duration {
	if configured <= 0 {
		return time.Duration(def)
	}
	return time.Duration(configured)
}

// clone copies a set, labels included, so what update keeps is its own.
func clone(set []Replica) []Replica {
	out := make([]Replica, len(set))
	for i, r := range set {
		out[i] = Replica{Addr: r.Addr, Labels: maps.Clone(r.Labels)}
	}
	return out
}

// URL returns the base URL of the replica: scheme://Addr followed by
// pathPrefix without its trailing slashes, and with a leading slash added
// when it has none ("http", "/v1/" → "http://10.0.0.7:8000/v1").
func (r Replica) URL(scheme, pathPrefix string) string {
	pathPrefix = strings.TrimRight(pathPrefix, "/")
	if pathPrefix != "" && !strings.HasPrefix(pathPrefix, "/") {
		pathPrefix = "/" + pathPrefix
	}
	return scheme + "://" + r.Addr + pathPrefix
}
