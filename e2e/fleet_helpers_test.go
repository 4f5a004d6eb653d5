//go:build e2e

package e2e

import (
	"fmt"
	"net/url"
	"slices"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/vllm-prober/vllm-prober/collector/metricname"
	"github.com/vllm-prober/vllm-prober/internal/daemontest"
	"github.com/vllm-prober/vllm-prober/internal/promtext"
	"github.com/vllm-prober/vllm-prober/probe/ledger"
	"github.com/vllm-prober/vllm-prober/probe/ledger/ledgertest"
	"github.com/vllm-prober/vllm-prober/simulator"
	"github.com/vllm-prober/vllm-prober/simulator/simtest"
)

// fleetProbe is the probe every fleet test runs: a steady open-loop chat
// at 10 requests per second per replica with constant gaps, with room for
// every request a slow replica holds in flight, judged against a 99%
// objective.
const fleetProbe = `probes:
  - name: chat
    api: chat
    rate: 10
    burstiness: inf
    max_in_flight: 64
    timeout: 10s
    request: {max_tokens: 16}
    workload: {prompts: [{messages: [{role: user, content: hi}]}]}
    quality: {finish_reasons: [stop, length]}
    objective: 0.99
`

// startFleetSims starts n simulators on 127.0.0.1, each with the faults f,
// and returns them with their host:port.
func startFleetSims(t *testing.T, n int, f simulator.Faults) ([]*simulator.Server, []string) {
	t.Helper()
	var sims []*simulator.Server
	var addrs []string
	for range n {
		sim, u := simtest.Start(t, simulator.DefaultOptions(), simtest.Faults(f))
		sims = append(sims, sim)
		addrs = append(addrs, hostPort(t, u))
	}
	return sims, addrs
}

// hostPort returns the host:port of a URL.
func hostPort(t *testing.T, raw string) string {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return u.Host
}

// pairID names a (target, probe, replica) pair in messages and maps.
type pairID struct{ target, probe, replica string }

func (p pairID) String() string { return fmt.Sprintf("%s/%s@%s", p.target, p.probe, p.replica) }

// fleetWatch scrapes a daemon's /metrics every 100ms until stopped. At
// every scrape it checks, per (target, probe, replica), that offered
// equals the sum of dispositions plus in flight, and it keeps each pair's
// series as last seen: once a pair has left the exposition, that is its
// final count.
type fleetWatch struct {
	url string

	mu      sync.Mutex
	scrapes int
	errs    []string
	current map[pairID]pairCount // pairs in the last scrape
	last    map[pairID]pairCount // every pair ever seen, as last seen
	goneAt  map[pairID]time.Time // when a scrape first lacked a pair seen before
	stop    chan struct{}
	done    chan struct{}
}

// pairCount is what one scrape showed of one pair.
type pairCount struct {
	offered, inFlight float64
	byDisposition     map[string]float64
}

func watchFleet(t *testing.T, p *daemontest.Proc) *fleetWatch {
	t.Helper()
	w := &fleetWatch{url: p.URL("/metrics"), last: map[pairID]pairCount{}, goneAt: map[pairID]time.Time{}, stop: make(chan struct{}), done: make(chan struct{})}
	go w.run()
	t.Cleanup(w.halt)
	return w
}

func (w *fleetWatch) run() {
	defer close(w.done)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		w.scrape()
		select {
		case <-w.stop:
			return
		case <-tick.C:
		}
	}
}

// scrape fetches /metrics once and checks the flow invariant; a failed
// fetch is not an error (the daemon may be stopping), a broken invariant is.
func (w *fleetWatch) scrape() {
	fams, err := promtext.Fetch(w.url)
	if err != nil {
		return
	}
	fetched := time.Now()
	cur := map[pairID]pairCount{}
	get := func(m *dto.Metric) (pairID, pairCount) {
		l := promtext.Labels(m)
		id := pairID{l["target"], l["probe"], l["replica"]}
		c, ok := cur[id]
		if !ok {
			c.byDisposition = map[string]float64{}
		}
		return id, c
	}
	for _, m := range fams[metricname.RequestsOffered].GetMetric() {
		id, c := get(m)
		c.offered = m.GetCounter().GetValue()
		cur[id] = c
	}
	for _, m := range fams[metricname.RequestsInFlight].GetMetric() {
		id, c := get(m)
		c.inFlight = m.GetGauge().GetValue()
		cur[id] = c
	}
	for _, m := range fams[metricname.Requests].GetMetric() {
		id, c := get(m)
		c.byDisposition[promtext.Labels(m)["disposition"]] = m.GetCounter().GetValue()
		cur[id] = c
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.scrapes++
	for id, c := range cur {
		var sum float64
		for _, v := range c.byDisposition {
			sum += v
		}
		if sum+c.inFlight != c.offered {
			w.errs = append(w.errs, fmt.Sprintf("scrape %d, %s: offered %g, dispositions %g + in flight %g", w.scrapes, id, c.offered, sum, c.inFlight))
		}
		w.last[id] = c
		delete(w.goneAt, id)
	}
	for id := range w.last {
		if _, there := cur[id]; !there && w.goneAt[id].IsZero() {
			w.goneAt[id] = fetched
		}
	}
	w.current = cur
}

// halt stops the scraping and waits for the last scrape.
func (w *fleetWatch) halt() {
	select {
	case <-w.stop:
	default:
		close(w.stop)
	}
	<-w.done
}

// check fails the test with every broken invariant seen so far.
func (w *fleetWatch) check(t *testing.T) {
	t.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, e := range w.errs {
		t.Error(e)
	}
	if len(w.errs) == 0 {
		t.Logf("flow invariant held at all %d scrapes", w.scrapes)
	}
}

// probed returns the replicas of target with series in the last scrape
// that have been offered requests, sorted.
func (w *fleetWatch) probed(target string) []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	for id, c := range w.current {
		if id.target == target && c.offered > 0 {
			out = append(out, id.replica)
		}
	}
	slices.Sort(out)
	return out
}

// pair returns what the last scrape showed of id and whether id was in it.
func (w *fleetWatch) pair(id pairID) (pairCount, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	c, ok := w.current[id]
	return c, ok
}

// final returns the last count seen of id, before it left the exposition.
func (w *fleetWatch) final(id pairID) pairCount {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.last[id]
}

// gone returns when a scrape first lacked id after it had been seen; zero
// while it is there.
func (w *fleetWatch) gone(id pairID) time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.goneAt[id]
}

// waitProbed waits until exactly addrs of target are probed and returns
// how long it took.
func (w *fleetWatch) waitProbed(t *testing.T, timeout time.Duration, target string, addrs []string) time.Duration {
	t.Helper()
	want := slices.Sorted(slices.Values(addrs))
	start := time.Now()
	daemontest.WaitFor(t, timeout, fmt.Sprintf("target %s probing exactly %v", target, want), func() bool {
		return slices.Equal(w.probed(target), want)
	})
	return time.Since(start)
}

// readFleetLedger reads a ledger and returns its records by pair, in file
// order; a torn line ends the test.
func readFleetLedger(t *testing.T, path string) map[pairID][]ledger.Record {
	t.Helper()
	out := map[pairID][]ledger.Record{}
	for _, r := range ledgertest.Read(t, path) {
		id := pairID{r.Target, r.Probe, r.Replica}
		out[id] = append(out[id], r)
	}
	return out
}
