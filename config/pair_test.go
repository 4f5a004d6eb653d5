package config

import (
	"slices"
	"testing"
)

func TestPairs(t *testing.T) {
	cfg := &Config{
		Targets: []Target{{Name: "a"}, {Name: "b", Probes: []string{"p3", "p1"}}, {Name: "c", Probes: []string{"gone"}}},
		Probes:  []Probe{{Name: "p1"}, {Name: "p2", Rate: 1}, {Name: "p3"}},
	}
	pairs := cfg.Pairs()
	var keys []string
	for _, p := range pairs {
		keys = append(keys, p.Key.String())
		if p.Key != (PairKey{p.Target.Name, p.Probe.Name}) {
			t.Errorf("pair %s holds target %q and probe %q", p.Key, p.Target.Name, p.Probe.Name)
		}
		if p.Fingerprint != fingerprint(p.Target, p.Probe) {
			t.Errorf("pair %s: fingerprint is not that of its target and probe", p.Key)
		}
	}
	if want := []string{"a/p1", "a/p2", "a/p3", "b/p3", "b/p1"}; !slices.Equal(keys, want) {
		t.Errorf("pairs %q, want %q", keys, want)
	}
	if pairs[0].Fingerprint == pairs[1].Fingerprint {
		t.Error("pairs of different probes share a fingerprint")
	}
}
