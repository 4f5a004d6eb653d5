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
	// PairStopped is called when a reload or a replica set's change
	// removes a pair, once it has stopped scheduling and its last request
	// in flight has ended with Finished (after at most the grace period),
	// unless the pair was added again meanwhile. Shutdown stops no
	// running pair: what ran stays visible until the process exits.
	PairStopped(key config.PairKey)
	// Offered is called when a request's planned time comes, before it is
	// sent (or refused by the in-flight cap).
	Offered(key config.PairKey)
	// Finished is called once per offered request with its final Result.
	Finished(r *Result)
}

// Key returns the pair the request belongs to.
func (r *Result) Key() config.PairKey {
	return config.PairKey{Target: r.Target, Probe: r.Probe, Replica: r.Replica}
}
