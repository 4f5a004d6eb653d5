package collector

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/proto"

	"github.com/vllm-prober/vllm-prober/config"
	"github.com/vllm-prober/vllm-prober/probe"
)

// TestGatherMatchesRegistry: Gather gives exactly the families and series
// a pedantic registry gathers from Collect (which checks every series),
// for full, lean and native-only pairs, a fingerprinted probe, a replica
// pair and every kind of result; and the pairs' series come in pair order.
func TestGatherMatchesRegistry(t *testing.T) {
	native := false
	cfg := testConfig(map[string][]string{"t1": nil, "t2": nil}, map[string]config.SLO{
		"full": {TTFT: dur("300ms"), TPOT: dur("50ms"), E2EL: dur("5s")},
		"lean": {TTFT: dur("1s")},
		"fp":   {},
	})
	for i, p := range cfg.Probes {
		switch p.Name {
		case "lean":
			cfg.Probes[i].Histograms, cfg.Probes[i].ClassicBuckets = config.LeanHistograms, &native
		case "fp":
			cfg.Probes[i].Fingerprint = &config.Fingerprint{Tokens: 16, Confirm: 3}
		}
	}
	c := New(Options{Now: clock})
	syncPairs(c, cfg)
	replica := config.Pair{Key: config.PairKey{Target: "t1", Probe: "lean", Replica: "10.0.0.1:8000"}, Probe: cfg.Probes[0]}
	for _, p := range cfg.Probes {
		if p.Name == "lean" {
			replica.Probe = p
		}
	}
	c.PairStarted(replica)
	keys := []config.PairKey{replica.Key}
	for _, p := range cfg.Pairs() {
		keys = append(keys, p.Key)
	}
	for i, k := range keys {
		for j, r := range []probe.Result{
			{Disposition: probe.Accepted, RequestID: "r1", TTFT: 120 * time.Millisecond, TPOT: 20 * time.Millisecond, E2EL: time.Second,
				ITLs: []time.Duration{20 * time.Millisecond}, Phases: probe.PhaseTimes{probe.PhaseHeaders: 5 * time.Millisecond},
				Server: &probe.ServerTiming{TTFT: 100 * time.Millisecond, QueueTime: time.Millisecond}, PromptTokens: 10, OutputTokens: 5,
				Fingerprint: &probe.OutputFingerprint{Hash: "b", Changed: true}},
			{Disposition: probe.LatencyFailure, Reason: probe.ReasonLatency, SLOViolations: []string{probe.SLOTTFT}, TTFT: 2 * time.Second},
			{Disposition: probe.QualityFailure, Reason: probe.ReasonQuality, QualityFailures: []string{probe.CheckRegex}},
			{Disposition: probe.ServerFailure, Reason: probe.ReasonHTTP5xx},
		} {
			if j > i%4 {
				break
			}
			r.Target, r.Probe, r.Replica, r.Sent, r.Scheduled = k.Target, k.Probe, k.Replica, fixedNow, fixedNow
			c.Offered(k)
			c.Finished(&r)
		}
		c.Offered(k) // one in flight
	}
	compareWithRegistry(t, c)
	// A stopped pair leaves both, in the middle of the order.
	c.PairStopped(keys[2])
	compareWithRegistry(t, c)
	if n := len(c.order); n != len(keys)-1 {
		t.Errorf("%d pairs in order after one of %d stopped", n, len(keys))
	}
}

// compareWithRegistry checks c.Gather against a pedantic registry's.
func compareWithRegistry(t *testing.T, c *Collector) {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	want, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.Gather()
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("%d families, want %d: %v", len(got), len(want), familyNames(got))
	}
	slices.SortFunc(got, func(a, b *dto.MetricFamily) int { return cmp.Compare(a.GetName(), b.GetName()) })
	for i, w := range want {
		g := got[i]
		if g.GetName() != w.GetName() || g.GetHelp() != w.GetHelp() || g.GetType() != w.GetType() {
			t.Errorf("family %d: %s (%s) %q, want %s (%s) %q", i, g.GetName(), g.GetType(), g.GetHelp(), w.GetName(), w.GetType(), w.GetHelp())
			continue
		}
		if !pairOrdered(g.Metric) {
			t.Errorf("%s: series not in pair order", g.GetName())
		}
		gm := slices.Clone(g.Metric)
		slices.SortFunc(gm, func(a, b *dto.Metric) int { return cmp.Compare(labelString(a), labelString(b)) })
		if len(gm) != len(w.Metric) {
			t.Errorf("%s: %d series, want %d", g.GetName(), len(gm), len(w.Metric))
			continue
		}
		for j := range gm {
			if !proto.Equal(gm[j], w.Metric[j]) {
				t.Errorf("%s series %d:\n got %v\nwant %v", g.GetName(), j, gm[j], w.Metric[j])
			}
		}
	}
}

// labelString renders a series' labels, sorted by name.
func labelString(m *dto.Metric) string {
	var b strings.Builder
	for _, l := range m.GetLabel() {
		fmt.Fprintf(&b, "%s=%q,", l.GetName(), l.GetValue())
	}
	return b.String()
}

// pairOrdered reports whether series come ordered by (target, probe,
// replica).
func pairOrdered(ms []*dto.Metric) bool {
	return slices.IsSortedFunc(ms, func(a, b *dto.Metric) int {
		la, lb := labelsOf(a), labelsOf(b)
		return compareKeys(config.PairKey{Target: la[labelTarget], Probe: la[labelProbe], Replica: la[labelReplica]},
			config.PairKey{Target: lb[labelTarget], Probe: lb[labelProbe], Replica: lb[labelReplica]})
	})
}

func labelsOf(m *dto.Metric) map[string]string {
	out := map[string]string{}
	for _, l := range m.GetLabel() {
		out[l.GetName()] = l.GetValue()
	}
	return out
}

func familyNames(mfs []*dto.MetricFamily) []string {
	var out []string
	for _, mf := range mfs {
		out = append(out, mf.GetName())
	}
	return out
}

// TestJoin: families of both gatherers come sorted by name; a family
// gathered twice is an error and is served once.
func TestJoin(t *testing.T) {
	c := New(Options{Now: clock})
	syncPairs(c, testConfig(map[string][]string{"t": nil}, map[string]config.SLO{"p": {}}))
	reg := prometheus.NewRegistry()
	reg.MustRegister(prometheus.NewGauge(prometheus.GaugeOpts{Name: "aaa_first"}), prometheus.NewGauge(prometheus.GaugeOpts{Name: "zzz_last"}))
	mfs, err := Join(reg, c).Gather()
	if err != nil {
		t.Fatal(err)
	}
	names := familyNames(mfs)
	if !slices.IsSorted(names) || names[0] != "aaa_first" || names[len(names)-1] != "zzz_last" || !slices.Contains(names, "vllm_probe_requests_total") {
		t.Errorf("families %v, want sorted, from both", names)
	}
	dup := prometheus.NewRegistry()
	dup.MustRegister(prometheus.NewGauge(prometheus.GaugeOpts{Name: "vllm_probe_requests_in_flight"}))
	mfs, err = Join(c, dup).Gather()
	if err == nil || !strings.Contains(err.Error(), "metric family vllm_probe_requests_in_flight gathered twice") {
		t.Errorf("error %v, want the family gathered twice", err)
	}
	if n := strings.Count(strings.Join(familyNames(mfs), " "), "vllm_probe_requests_in_flight"); n != 1 {
		t.Errorf("vllm_probe_requests_in_flight served %d times, want once", n)
	}
}
