package config

import (
	"strings"

	"github.com/vllm-prober/vllm-prober/discovery"
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
		if p.Key != (PairKey{Target: p.Target.Name, Probe: p.Probe.Name}) {
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

// TestPairsWith resolves a gateway with replicas, a discovery-only target
// and a static one against replica sets given directly.
func TestPairsWith(t *testing.T) {
	cfg, err := Parse([]byte(`
targets:
  - name: gw
    url: http://gateway:8000
    discovery: {dns: {names: [vllm.svc], port: 8000}}
    path_prefix: /v/
    max_replicas: 2
  - name: only
    discovery: {file_sd: {files: [fleet.json]}}
    scheme: https
  - name: static
    url: http://static:8000
probes:
  - name: split
    api: chat
    rate: 3
    rate_split: true
    workload: {prompts: [{messages: [{role: user, content: hi}]}]}
  - name: each
    api: chat
    rate: 2
    histograms: [ttft, itl]
    workload: {prompts: [{messages: [{role: user, content: hi}]}]}
`), "fleet.yml")
	if err != nil {
		t.Fatal(err)
	}
	sets := map[string][]discovery.Replica{
		"gw":   {{Addr: "10.0.0.3:8000"}, {Addr: "10.0.0.1:8000"}, {Addr: "10.0.0.2:8000"}},
		"only": {{Addr: "b:1", Labels: map[string]string{"zone": "z1"}}, {Addr: "a:1"}},
		// A static target has no discovery: a set given for it is ignored.
		"static": {{Addr: "x:1"}},
	}
	type row struct {
		key, url   string
		rate       float64
		histograms string
	}
	var got []row
	for _, p := range cfg.PairsWith(sets) {
		got = append(got, row{p.Key.String(), p.Target.URL, p.Probe.Rate, strings.Join(p.Probe.Histograms, ",")})
	}
	full := strings.Join(Histograms, ",")
	want := []row{
		{"gw/split", "http://gateway:8000", 3, full},
		{"gw/split@10.0.0.1:8000", "http://10.0.0.1:8000/v", 1.5, "ttft,e2el"},
		{"gw/split@10.0.0.2:8000", "http://10.0.0.2:8000/v", 1.5, "ttft,e2el"},
		{"gw/each", "http://gateway:8000", 2, "ttft,itl"},
		{"gw/each@10.0.0.1:8000", "http://10.0.0.1:8000/v", 2, "ttft,itl"},
		{"gw/each@10.0.0.2:8000", "http://10.0.0.2:8000/v", 2, "ttft,itl"},
		{"only/split@a:1", "https://a:1", 1.5, "ttft,e2el"},
		{"only/split@b:1", "https://b:1", 1.5, "ttft,e2el"},
		{"only/each@a:1", "https://a:1", 2, "ttft,itl"},
		{"only/each@b:1", "https://b:1", 2, "ttft,itl"},
		{"static/split", "http://static:8000", 3, full},
		{"static/each", "http://static:8000", 2, "ttft,itl"},
	}
	if !slices.Equal(got, want) {
		t.Errorf("pairs\n%v\nwant\n%v", got, want)
	}
	if n := len(cfg.Pairs()); n != 4 {
		t.Errorf("Pairs() gave %d pairs, want the 4 of the gateway and the static target", n)
	}

	// A replica's labels are part of its pair's configuration, and a third
	// replica changes every split pair's rate (so its fingerprint).
	fp := func(sets map[string][]discovery.Replica, key string) string {
		for _, p := range cfg.PairsWith(sets) {
			if p.Key.String() == key {
				return p.Fingerprint
			}
		}
		t.Fatalf("no pair %s", key)
		return ""
	}
	before := fp(sets, "only/each@b:1")
	sets["only"][0].Labels = map[string]string{"zone": "z2"}
	if fp(sets, "only/each@b:1") == before {
		t.Error("a replica's labels changed, its fingerprint did not")
	}
	before = fp(sets, "only/split@a:1")
	sets["only"] = append(sets["only"], discovery.Replica{Addr: "c:1"})
	if fp(sets, "only/split@a:1") == before {
		t.Error("rate_split: a replica joined, the others' fingerprint did not change")
	}
}

func TestKeptReplicas(t *testing.T) {
	target := Target{Discovery: &discovery.Config{}, MaxReplicas: 2}
	got := KeptReplicas(target, []discovery.Replica{{Addr: "c:1"}, {Addr: "a:1"}, {Addr: "a:1"}, {Addr: "b:1"}})
	if want := []discovery.Replica{{Addr: "a:1"}, {Addr: "b:1"}}; !slices.EqualFunc(got, want, func(a, b discovery.Replica) bool { return a.Addr == b.Addr }) {
		t.Errorf("kept %v, want %v", got, want)
	}
	if got := KeptReplicas(Target{}, []discovery.Replica{{Addr: "a:1"}}); got != nil {
		t.Errorf("a target without discovery kept %v", got)
	}
}
