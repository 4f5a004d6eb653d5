package probe

import "github.com/vllm-prober/vllm-prober/config"

// Sink receives the life of every pair and the facts of every request from
// the Engine, the only owner of the live set of pairs (docs/design.md,
// Pair lifecycle). Implementations must be safe for concurrent use, must
// not block and must not call the Engine.
type Sink interface {
	// PairStarted is called when a pair starts, and again when a reload
	// changes its configuration (same Key, another Fingerprint: the pair
	// continues), before the first Offered under that configuration.
	PairStarted(p config.Pair)
	// PairStopped is called when a reload removes a pair, once it has
	// stopped scheduling. Its requests still in flight end later with
	// Finished; a sink that dropped the pair ignores them. Shutdown stops
	// no pair: what ran stays visible until the process exits.
	PairStopped(key config.PairKey)
	// Offered is called when a request's planned time comes, before it is
	// sent (or refused by the in-flight cap).
	Offered(target, probe string)
	// Finished is called once per offered request with its final Result.
	Finished(r *Result)
}

// Sinks fans the Engine's events out to several sinks, in order.
type Sinks []Sink

// PairStarted implements Sink.
func (ss Sinks) PairStarted(p config.Pair) {
	for _, s := range ss {
		s.PairStarted(p)
	}
}

// PairStopped implements Sink.
func (ss Sinks) PairStopped(key config.PairKey) {
	for _, s := range ss {
		s.PairStopped(key)
	}
}

// Offered implements Sink.
func (ss Sinks) Offered(target, probe string) {
	for _, s := range ss {
		s.Offered(target, probe)
	}
}

// Finished implements Sink.
func (ss Sinks) Finished(r *Result) {
	for _, s := range ss {
		s.Finished(r)
	}
}

var (
	_ Sink = (*Ledger)(nil)
	_ Sink = (*History)(nil)
)

// PairStarted implements Sink: the ledger records requests, not pairs.
func (l *Ledger) PairStarted(config.Pair) {}

// PairStopped implements Sink: records of a removed pair stay in the
// ledger, those of its last requests included.
func (l *Ledger) PairStopped(config.PairKey) {}

// Offered implements Sink: a request is recorded once it has finished.
func (l *Ledger) Offered(string, string) {}

// Finished implements Sink by writing r's record.
func (l *Ledger) Finished(r *Result) { l.Write(r) }
