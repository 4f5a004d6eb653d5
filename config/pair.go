package config

import (
	"slices"
	"strings"

	"github.com/vllm-prober/vllm-prober/discovery"
)

// PairKey names one (target, probe, replica) pair. Replica is a discovered
// replica's host:port, "" for a static target or a fleet's gateway
// (docs/design.md, Fleets).
type PairKey struct {
	Target, Probe, Replica string
}

// String returns "target/probe", or "target/probe@replica" for a replica,
// the pair's name in logs and errors.
func (k PairKey) String() string {
	if k.Replica != "" {
		return k.Target + "/" + k.Probe + "@" + k.Replica
	}
	return k.Target + "/" + k.Probe
}

// Pair is one (target, probe, replica) pair the configuration runs: the
// unit the probe engine schedules and every per-pair view (metrics,
// status, history) follows (docs/design.md, Pair lifecycle).
type Pair struct {
	Key    PairKey
	Target Target // a replica's: URL is the replica's
	Probe  Probe  // a replica's: Rate and Histograms as PairsWith set them
	// Labels are the labels the replica's discovery gave it (file_sd,
	// http_sd); nil for a static target or a gateway.
	Labels map[string]string
	// Fingerprint is a digest of everything that configures the pair
	// (Target and Probe, secrets included, source lines not): two pairs
	// with the same Key and Fingerprint run the same way, so a reload
	// that keeps both leaves the pair alone.
	Fingerprint string
}

// Pairs resolves the pairs of the static targets and gateways, as
// PairsWith does with no replica discovered.
func (c *Config) Pairs() []Pair {
	return c.PairsWith(nil)
}

// PairsWith resolves the pairs of the configuration with the current
// replicas of its discovery targets (by target name; each set sorted by
// Addr), in file order: targets in order, each with the probes it runs
// (ProbesFor); a target's gateway (its url) first, then its replicas. A
// pair is listed once even if a target names a probe twice. A target keeps
// its first max_replicas replicas (KeptReplicas). A gateway pair keeps the
// probe's whole rate; with rate_split each replica pair gets rate / the
// number of replicas kept, so the fleet's replicas together get rate.
func (c *Config) PairsWith(replicas map[string][]discovery.Replica) []Pair {
	var out []Pair
	seen := map[PairKey]bool{}
	add := func(p Pair) {
		if seen[p.Key] {
			return
		}
		seen[p.Key] = true
		p.Fingerprint = fingerprint(p.Target, p.Probe, p.Labels)
		out = append(out, p)
	}
	for _, t := range c.Targets {
		kept := KeptReplicas(t, replicas[t.Name])
		for _, p := range c.ProbesFor(t) {
			if t.URL != "" || t.Discovery == nil {
				add(Pair{Key: PairKey{Target: t.Name, Probe: p.Name}, Target: t, Probe: p})
			}
			for _, r := range kept {
				add(replicaPair(t, p, r, len(kept)))
			}
		}
	}
	return out
}

// KeptReplicas returns the replicas of t that are probed: the first
// max_replicas by Addr, none when t has no discovery.
func KeptReplicas(t Target, replicas []discovery.Replica) []discovery.Replica {
	if t.Discovery == nil {
		return nil
	}
	sorted := slices.SortedFunc(slices.Values(replicas), func(a, b discovery.Replica) int { return strings.Compare(a.Addr, b.Addr) })
	sorted = slices.CompactFunc(sorted, func(a, b discovery.Replica) bool { return a.Addr == b.Addr })
	if t.MaxReplicas > 0 && len(sorted) > t.MaxReplicas {
		sorted = sorted[:t.MaxReplicas]
	}
	return sorted
}

// replicaPair is the pair of probe p on replica r of target t, one of n:
// the replica's URL; the probe's rate, or its share with rate_split; the
// lean histograms unless the file chose some.
func replicaPair(t Target, p Probe, r discovery.Replica, n int) Pair {
	t.URL = r.URL(t.Scheme, t.PathPrefix)
	if p.RateSplit {
		p.Rate /= float64(n)
	}
	p = p.ReplicaHistograms()
	return Pair{Key: PairKey{Target: t.Name, Probe: p.Name, Replica: r.Addr}, Target: t, Probe: p, Labels: r.Labels}
}
