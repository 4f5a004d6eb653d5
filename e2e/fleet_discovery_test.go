//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/vllm-prober/vllm-prober/collector/metricname"
	"github.com/vllm-prober/vllm-prober/internal/daemontest"
	"github.com/vllm-prober/vllm-prober/internal/dnstest"
	"github.com/vllm-prober/vllm-prober/internal/promtext"
	"github.com/vllm-prober/vllm-prober/internal/testfile"
	"github.com/vllm-prober/vllm-prober/probe"
	"github.com/vllm-prober/vllm-prober/probe/ledger"
	"github.com/vllm-prober/vllm-prober/simulator"
)

// TestFleetFileSDUnderLoad runs the binary against a file_sd fleet whose
// replicas answer slowly (a second before the first token), so every
// replica always has requests in flight: a third replica written into the
// file is probed within a refresh; a replica taken out stops being
// scheduled, its in-flight requests finish and its series go; an empty
// file ends the others the same way. At every scrape offered = sum of
// dispositions + in flight per (target, probe, replica); at the end each
// replica's ledger records (seqs 1..n, each disposition counted) equal its
// last counts in /metrics: no request lost or counted twice.
func TestFleetFileSDUnderLoad(t *testing.T) {
	_, addrs := startFleetSims(t, 3, simulator.Faults{ExtraTTFT: time.Second})
	dir := t.TempDir()
	ledgerPath := filepath.Join(dir, "ledger.jsonl")
	writeTargetGroups(t, dir, addrs[:2])
	cfg := testfile.Write(t, dir, "c.yml", fmt.Sprintf(`global:
  ledger: {path: %q}
targets:
  - name: fleet
    model: sim-llama
    metrics_path: ""
    discovery: {file_sd: {files: [fleet.json], refresh: 1s}}
`, ledgerPath)+fleetProbe)
	p := daemontest.Start(t, binary, "--config.file="+cfg)
	w := watchFleet(t, p)

	w.waitProbed(t, 20*time.Second, "fleet", addrs[:2])
	writeTargetGroups(t, dir, addrs)
	took := w.waitProbed(t, 10*time.Second, "fleet", addrs)
	t.Logf("the added replica was probed %s after the file changed (refresh 1s)", took.Round(100*time.Millisecond))

	removed := pairID{"fleet", "chat", addrs[0]}
	if c, _ := w.pair(removed); c.inFlight == 0 {
		t.Fatalf("replica %s has nothing in flight before its removal: the test would not prove draining", addrs[0])
	}
	writeTargetGroups(t, dir, addrs[1:])
	waitGone(t, w, removed)
	w.waitProbed(t, 5*time.Second, "fleet", addrs[1:])

	writeTargetGroups(t, dir, nil)
	for _, a := range addrs[1:] {
		waitGone(t, w, pairID{"fleet", "chat", a})
	}
	w.halt()
	if err := p.Stop(t, syscall.SIGTERM); err != nil {
		t.Fatalf("daemon exit: %v\n%s", err, p.Logs())
	}
	w.check(t)
	checkLedgerAgainstCounts(t, readFleetLedger(t, ledgerPath), w, addrs)
}

// waitGone waits until id's series have left the exposition, which they
// do once its last in-flight request has finished.
func waitGone(t *testing.T, w *fleetWatch, id pairID) {
	t.Helper()
	daemontest.WaitFor(t, 20*time.Second, fmt.Sprintf("the series of %s to go", id), func() bool {
		_, there := w.pair(id)
		return !there
	})
	if c := w.final(id); c.inFlight != 0 {
		t.Logf("%s drained %g requests in flight after it stopped being scheduled", id, c.inFlight)
	}
}

// checkLedgerAgainstCounts: per replica, the ledger holds seqs 1..n once
// each, n equals the pair's last offered count, and its records by
// disposition equal the last disposition counters plus what was still in
// flight (which finished and was recorded after the last scrape), none
// was cancelled by the removal or the shutdown, and the last one ended
// before the pair's series went.
func checkLedgerAgainstCounts(t *testing.T, recs map[pairID][]ledger.Record, w *fleetWatch, addrs []string) {
	t.Helper()
	for _, a := range addrs {
		id := pairID{"fleet", "chat", a}
		rs := recs[id]
		last := w.final(id)
		seqs := make([]uint64, len(rs))
		for i, r := range rs {
			seqs[i] = r.Seq
		}
		slices.Sort(seqs)
		for i, s := range seqs {
			if s != uint64(i+1) {
				t.Errorf("%s: sorted seq %d is %d: a record lost or duplicated", id, i+1, s)
				break
			}
		}
		if len(rs) == 0 || float64(len(rs)) != last.offered {
			t.Errorf("%s: %d ledger records, last offered %g", id, len(rs), last.offered)
		}
		byDisp := map[string]float64{}
		var lastEnd time.Time
		for _, r := range rs {
			byDisp[string(r.Disposition)]++
			if r.Sent != nil && r.E2ELS != nil {
				if end := r.Sent.Add(time.Duration(*r.E2ELS * float64(time.Second))); end.After(lastEnd) {
					lastEnd = end
				}
			}
			if r.Reason == probe.ReasonRemoved || r.Reason == probe.ReasonShutdown {
				t.Errorf("%s: request %d cancelled (%s): it should have finished within the grace period", id, r.Seq, r.Reason)
			}
		}
		if gone := w.gone(id); gone.IsZero() || lastEnd.After(gone) {
			t.Errorf("%s: its last request ended at %s, its series were gone by %s: they must go only after it", id, lastEnd.Format(time.StampMilli), gone.Format(time.StampMilli))
		}
		var counted float64
		for d, n := range last.byDisposition {
			if byDisp[d] < n {
				t.Errorf("%s: %g %s records, the counter said %g", id, byDisp[d], d, n)
			}
			counted += n
		}
		t.Logf("%s: %d records (%v), offered %g, %g finished after the last scrape", id, len(rs), byDisp, last.offered, float64(len(rs))-counted)
	}
	for id := range recs {
		if id.replica == "" {
			t.Errorf("%d ledger records of %s without a replica", len(recs[id]), id)
		}
	}
}

// writeTargetGroups replaces dir/fleet.json with one target group of
// addrs.
func writeTargetGroups(t *testing.T, dir string, addrs []string) {
	t.Helper()
	daemontest.WriteFileSD(t, filepath.Join(dir, "fleet.json"), addrs, nil)
}

// TestFleetHTTPSD runs the binary with a target whose replicas an http_sd
// endpoint lists: when the list changes the probed set follows within a
// refresh, each replica's http_sd labels are on its target_info, and
// offered = sum of dispositions + in flight at every scrape.
func TestFleetHTTPSD(t *testing.T) {
	_, addrs := startFleetSims(t, 3, simulator.Faults{})
	var mu sync.Mutex
	listed := addrs[:2]
	sd := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		var groups []map[string]any
		for i, a := range listed {
			groups = append(groups, map[string]any{"targets": []string{a}, "labels": map[string]string{"slot": fmt.Sprint(i)}})
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(groups)
	}))
	t.Cleanup(sd.Close)

	dir := t.TempDir()
	cfg := testfile.Write(t, dir, "c.yml", fmt.Sprintf(`targets:
  - name: fleet
    model: sim-llama
    metrics_path: ""
    discovery: {http_sd: {url: %q, refresh: 1s}}
`, sd.URL)+fleetProbe)
	p := daemontest.Start(t, binary, "--config.file="+cfg)
	w := watchFleet(t, p)
	w.waitProbed(t, 20*time.Second, "fleet", addrs[:2])

	mu.Lock()
	listed = []string{addrs[2], addrs[0]}
	mu.Unlock()
	w.waitProbed(t, 10*time.Second, "fleet", []string{addrs[0], addrs[2]})
	w.halt()
	w.check(t)

	fams := promtext.Scrape(t, p.URL("/metrics"))
	slots := map[string]string{}
	for _, m := range fams[metricname.TargetInfo].GetMetric() {
		l := promtext.Labels(m)
		slots[l["replica"]] = l["slot"]
	}
	if slots[addrs[2]] != "0" || slots[addrs[0]] != "1" || len(slots) != 2 {
		t.Errorf("target_info slot label by replica %v, want %s: 0, %s: 1", slots, addrs[2], addrs[0])
	}
}

// TestFleetDNS runs the binary with two targets found through a DNS
// server of the test's own (--discovery.dns-server): one by A records,
// whose replicas are simulators on 127.0.0.1 and 127.0.0.2 sharing a
// port, one by SRV records pointing at localhost with each simulator's
// port. Records added and removed on the server are followed within a
// refresh, the replicas are reached at the addresses found (requests
// accepted), and offered = sum of dispositions + in flight at every scrape.
func TestFleetDNS(t *testing.T) {
	_, srv := startFleetSims(t, 3, simulator.Faults{})
	ports := make([]uint16, len(srv))
	for i, a := range srv {
		_, p, _ := net.SplitHostPort(a)
		n, _ := strconv.Atoi(p)
		ports[i] = uint16(n)
	}
	aPort := startSimPair(t)

	z, dnsAddr, _ := dnstest.Start(t)
	z.Set(t, "a.fleet.test.", aRecord("a.fleet.test.", "127.0.0.1"))
	z.Set(t, "srv.fleet.test.", srvRecord("srv.fleet.test.", ports[0]), srvRecord("srv.fleet.test.", ports[1]))

	dir := t.TempDir()
	cfg := testfile.Write(t, dir, "c.yml", fmt.Sprintf(`targets:
  - name: by-a
    model: sim-llama
    metrics_path: ""
    discovery: {dns: {names: [a.fleet.test], type: A, port: %d, refresh: 1s}}
  - name: by-srv
    model: sim-llama
    metrics_path: ""
    discovery: {dns: {names: [srv.fleet.test], type: SRV, refresh: 1s}}
`, aPort)+fleetProbe)
	if code, out := daemontest.Run(t, binary, "--config.file="+cfg, "--discovery.dns-server=no-port"); code != 2 || !strings.Contains(out, "--discovery.dns-server") {
		t.Errorf("--discovery.dns-server=no-port: exit %d, want 2 naming the flag:\n%s", code, out)
	}
	p := daemontest.Start(t, binary, "--config.file="+cfg, "--discovery.dns-server="+dnsAddr)
	w := watchFleet(t, p)

	a1, a2 := net.JoinHostPort("127.0.0.1", strconv.Itoa(aPort)), net.JoinHostPort("127.0.0.2", strconv.Itoa(aPort))
	local := func(port uint16) string { return net.JoinHostPort("localhost", strconv.Itoa(int(port))) }
	w.waitProbed(t, 20*time.Second, "by-a", []string{a1})
	w.waitProbed(t, 20*time.Second, "by-srv", []string{local(ports[0]), local(ports[1])})

	z.Set(t, "a.fleet.test.", aRecord("a.fleet.test.", "127.0.0.1"), aRecord("a.fleet.test.", "127.0.0.2"))
	z.Set(t, "srv.fleet.test.", srvRecord("srv.fleet.test.", ports[1]), srvRecord("srv.fleet.test.", ports[2]))
	w.waitProbed(t, 10*time.Second, "by-a", []string{a1, a2})
	w.waitProbed(t, 10*time.Second, "by-srv", []string{local(ports[1]), local(ports[2])})

	z.Set(t, "a.fleet.test.", aRecord("a.fleet.test.", "127.0.0.2"))
	w.waitProbed(t, 10*time.Second, "by-a", []string{a2})
	for _, id := range []pairID{{"by-a", "chat", a2}, {"by-srv", "chat", local(ports[1])}, {"by-srv", "chat", local(ports[2])}} {
		daemontest.WaitFor(t, 10*time.Second, fmt.Sprintf("an accepted request of %s", id), func() bool {
			c, _ := w.pair(id)
			return c.byDisposition["accepted"] > 0
		})
	}
	w.halt()
	w.check(t)
}

// startSimPair starts two simulators on one port, at 127.0.0.1 and
// 127.0.0.2 (Linux routes 127.0.0.0/8 to the loopback), and returns it.
func startSimPair(t *testing.T) int {
	t.Helper()
	for range 5 {
		s1, u, err := simulator.Serve(simulator.DefaultOptions(), "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s1.Close() })
		_, port, _ := net.SplitHostPort(hostPort(t, u))
		s2, _, err := simulator.Serve(simulator.DefaultOptions(), "127.0.0.2:"+port)
		if err != nil {
			t.Logf("port %s is taken on 127.0.0.2, trying another: %v", port, err)
			continue
		}
		t.Cleanup(func() { _ = s2.Close() })
		n, _ := strconv.Atoi(port)
		return n
	}
	t.Fatal("no port free on both 127.0.0.1 and 127.0.0.2")
	return 0
}

// aRecord is an A record of name in zone file syntax.
func aRecord(name, ip string) string { return fmt.Sprintf("%s 1 IN A %s", name, ip) }

// srvRecord points name at localhost in zone file syntax: Go's resolver
// refuses an IP as an SRV target, and the prober resolves the target name
// when it connects.
func srvRecord(name string, port uint16) string {
	return fmt.Sprintf("%s 1 IN SRV 0 1 %d localhost.", name, port)
}
