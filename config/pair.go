package config

// PairKey names one (target, probe) pair.
type PairKey struct {
	Target, Probe string
}

// String returns "target/probe", the pair's name in logs and errors.
func (k PairKey) String() string {
	return k.Target + "/" + k.Probe
}

// Pair is one (target, probe) pair the configuration runs: the unit the
// probe engine schedules and every per-pair view (metrics, status,
// history) follows (docs/design.md, Pair lifecycle).
type Pair struct {
	Key    PairKey
	Target Target
	Probe  Probe
	// Fingerprint is a digest of everything that configures the pair
	// (Target and Probe, secrets included, source lines not): two pairs
	// with the same Key and Fingerprint run the same way, so a reload
	// that keeps both leaves the pair alone.
	Fingerprint string
}

// Pairs resolves the pairs of the configuration once, in file order:
// targets in order, each with the probes it runs (ProbesFor). A pair is
// listed once even if a target names a probe twice.
func (c *Config) Pairs() []Pair {
	var out []Pair
	seen := map[PairKey]bool{}
	for _, t := range c.Targets {
		for _, p := range c.ProbesFor(t) {
			k := PairKey{t.Name, p.Name}
			if seen[k] {
				continue
			}
			seen[k] = true
			out = append(out, Pair{Key: k, Target: t, Probe: p, Fingerprint: fingerprint(t, p)})
		}
	}
	return out
}
