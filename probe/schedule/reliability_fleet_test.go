package schedule_test

import (
	"math/rand/v2"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vllm-prober/vllm-prober/config"
	"github.com/vllm-prober/vllm-prober/discovery"
	"github.com/vllm-prober/vllm-prober/probe"
	"github.com/vllm-prober/vllm-prober/probe/schedule"
	"github.com/vllm-prober/vllm-prober/simulator"
)

// TestFleetChurn drives a fleet's replica set directly, as discovery
// would, against four simulators (one stalls, so removed replicas have
// requests in flight): replicas join and leave at random while a gateway
// pair runs throughout. At every step, per (target, probe, replica) series,
// offered = sum of dispositions + in flight; a replica that left keeps its
// series until its last request was counted. At the end, per pair, offered
// == finished == ledger records with seqs 1..n, and the counters of the
// pairs still running equal their ledger records.
func TestFleetChurn(t *testing.T) {
	var addrs []string
	for i := range 4 {
		f := simulator.Faults{}
		if i == 3 {
			f = simulator.Faults{Stall: 0.3, StallDuration: 400 * time.Millisecond}
		}
		u, err := url.Parse(relSim(t, int64(i+1), f))
		if err != nil {
			t.Fatal(err)
		}
		addrs = append(addrs, u.Host)
	}
	cfg := fleetConfig(t, addrs[0])
	a := newAccounting(t)
	stops := &stopSink{t: t, reg: a.reg}
	e := schedule.NewEngine(schedule.EngineOptions{Sinks: a.sinks(stops), Grace: 2 * time.Second})
	path, lg, reg, counting := a.path, a.lg, a.reg, a.counting

	rng := rand.New(rand.NewPCG(15, 4))
	in := map[string]bool{addrs[0]: true, addrs[3]: true}
	var sizes []int
	for step := range 20 {
		var set []discovery.Replica
		for _, a := range addrs {
			if in[a] {
				set = append(set, discovery.Replica{Addr: a})
			}
		}
		sizes = append(sizes, len(set))
		if err := e.ApplyPairs(cfg.PairsWith(map[string][]discovery.Replica{"fleet": set})); err != nil {
			t.Fatal(err)
		}
		for i := range 3 {
			time.Sleep(time.Duration(20+rng.IntN(60)) * time.Millisecond)
			checkFlow(t, gatherCounts(t, reg), step, i)
		}
		a := addrs[rng.IntN(len(addrs))]
		in[a] = !in[a]
	}
	recs := schedule.StopAndReadLedger(t, e, lg, path)
	checkEveryRequestOnce(t, recs, counting)
	checkCurrentSeries(t, recs, gatherCounts(t, reg), counting.began)
	perReplica := map[string]int{}
	for _, r := range recs {
		perReplica[r.Replica]++
	}
	if len(perReplica) != 5 {
		t.Errorf("records per replica %v, want the gateway's and each of the 4 replicas'", perReplica)
	}
	if stops.n == 0 {
		t.Error("no replica pair stopped")
	}
	t.Logf("replica set sizes %v: %d records, per replica %v", sizes, len(recs), perReplica)
}

// stopSink checks, when a pair stops, that the collector still holds its
// series with nothing in flight: its last request was counted first.
type stopSink struct {
	t   *testing.T
	reg *prometheus.Registry
	n   int // PairStopped calls; the engine makes them under its lock
}

func (s *stopSink) PairStarted(config.Pair) {}

func (s *stopSink) PairStopped(key config.PairKey) {
	s.n++
	pc := gatherCounts(s.t, s.reg)[key.String()]
	if pc == nil || pc.inFlight != 0 { // offered may be 0: a replica can leave before its first planned time
		s.t.Errorf("%s stopped with series %+v: want its series, every offer ended", key, pc)
	}
}

func (s *stopSink) Offered(config.PairKey) {}

func (s *stopSink) Finished(*probe.Result) {}

// checkFlow checks offered = sum of dispositions + in flight per series.
func checkFlow(t *testing.T, counts map[string]*pairCounts, step, i int) {
	t.Helper()
	for key, pc := range counts {
		if pc.inFlight < 0 || sum(pc.dispositions)+pc.inFlight != pc.offered {
			t.Errorf("step %d.%d: %s offered %g, dispositions %v, in flight %g", step, i, key, pc.offered, pc.dispositions, pc.inFlight)
		}
	}
}

// fleetConfig is a fleet whose gateway is gateway and whose replicas run
// two probes, one with rate_split.
func fleetConfig(t *testing.T, gateway string) *config.Config {
	t.Helper()
	cfg, err := config.Parse([]byte(strings.ReplaceAll(`
targets:
  - name: fleet
    url: http://GATEWAY
    model: sim-llama
    discovery: {file_sd: {files: [fleet.json]}}
probes:
  - name: each
    api: chat
    rate: 6
    timeout: 1s
    request: {max_tokens: 8}
    workload: {prompts: [{messages: [{role: user, content: hi}]}]}
    quality: {finish_reasons: [stop, length]}
  - name: split
    api: completions
    rate: 10
    rate_split: true
    timeout: 1s
    workload: {random: {input_tokens: 8, output_tokens: 4}}
    quality: {finish_reasons: [stop, length]}
`, "GATEWAY", gateway)), "fleet.yml")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(cfg.Probes, func(p config.Probe) bool { return p.RateSplit }) {
		t.Fatal("no rate_split probe")
	}
	return cfg
}
