package main

import (
	"encoding/json"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/vllm-prober/vllm-prober/collector/metricname"
	"github.com/vllm-prober/vllm-prober/internal/daemontest"
	"github.com/vllm-prober/vllm-prober/internal/promtext"
	"github.com/vllm-prober/vllm-prober/internal/testfile"
	"github.com/vllm-prober/vllm-prober/probe/ledger"
)

// TestFleetFileSD runs the daemon in-process with a fleet found by file_sd
// among three simulators, grows the file from one replica to three and
// shrinks it to one: each replica is probed within a refresh, its series
// carry its replica label, its server is scraped, its file_sd labels are on
// its target_info, the status page and the results API name it; a replica
// that leaves stops, and its series go. Throughout, offered = sum of
// dispositions + in flight per series; at the end every pair's ledger
// seqs are 1..n and the remaining replica's counters equal its records.
func TestFleetFileSD(t *testing.T) {
	addrs := startReplicas(t, 3)
	dir := t.TempDir()
	ledgerPath := filepath.Join(dir, "ledger.jsonl")
	writeFileSD(t, dir, addrs[:1])
	cfgPath := testfile.Write(t, dir, "c.yml", fmt.Sprintf(`global:
  ledger: {path: %q}
  server_metrics: {interval: 1s, timeout: 1s}
targets:
  - name: fleet
    model: sim-llama
    discovery: {file_sd: {files: [fleet.json], refresh: 1s}}
`+fleetChatProbe, ledgerPath))
	d := startInProcess(t, cfgPath)

	waitReplicas(t, d, addrs[:1])
	writeFileSD(t, dir, addrs)
	waitReplicas(t, d, addrs)
	checkReplicaInfo(t, d, addrs)
	checkReplicaPages(t, d, addrs[1])

	writeFileSD(t, dir, addrs[2:])
	waitReplicas(t, d, addrs[2:])
	d.shutdown()
	d.closeLedger()

	_, seqs := readLedgerSeqs(t, ledgerPath)
	for _, a := range addrs {
		if len(seqs["fleet/chat@"+a]) == 0 {
			t.Errorf("replica %s: no ledger record", a)
		}
	}
	last := promtext.Families(t, d.reg)
	offered := sumFamily(last[metricname.RequestsOffered], addrs[2])
	if n := len(seqs["fleet/chat@"+addrs[2]]); offered == 0 || offered != float64(n) {
		t.Errorf("replica %s: offered %g, ledger records %d", addrs[2], offered, n)
	}
}

// fleetChatProbe is the probes of the fleet tests' configs: one chat
// probe, "chat", at 10/s.
const fleetChatProbe = `probes:
  - name: chat
    api: chat
    rate: 10
    timeout: 5s
    workload: {prompts: [{messages: [{role: user, content: hi}]}]}
    quality: {finish_reasons: [stop, length]}
`

// startReplicas starts n simulators and returns their host:port.
func startReplicas(t *testing.T, n int) []string {
	t.Helper()
	var addrs []string
	for range n {
		u, err := url.Parse(startSimulator(t))
		if err != nil {
			t.Fatal(err)
		}
		addrs = append(addrs, u.Host)
	}
	return addrs
}

// writeFileSD replaces dir/fleet.json with one group of addrs, labelled
// zone=a.
func writeFileSD(t *testing.T, dir string, addrs []string) {
	t.Helper()
	daemontest.WriteFileSD(t, filepath.Join(dir, "fleet.json"), addrs, map[string]string{"zone": "a"})
}

// waitReplicas waits until exactly the replicas addrs have accepted
// requests in their series and the discovery gauge says so, checking the
// flow invariant at every scrape, and returns the last scrape.
func waitReplicas(t *testing.T, d *daemon, addrs []string) map[string]*dto.MetricFamily {
	t.Helper()
	var fams map[string]*dto.MetricFamily
	var have []string
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		fams = promtext.Families(t, d.reg)
		checkFleetFlow(t, fams)
		have = nil
		for _, m := range fams[metricname.RequestsOffered].GetMetric() {
			if r := promtext.Labels(m)["replica"]; m.GetCounter().GetValue() > 0 {
				have = append(have, r)
			}
		}
		slices.Sort(have)
		gauge := fams[metricname.DiscoveryReplicas].GetMetric()
		if slices.Equal(have, sorted(addrs)) && len(gauge) == 1 && gauge[0].GetGauge().GetValue() == float64(len(addrs)) {
			return fams
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("replicas with series %v, want %v", have, sorted(addrs))
	return nil
}

func sorted(s []string) []string { return slices.Sorted(slices.Values(s)) }

// checkFleetFlow checks offered = sum of dispositions + in flight per
// replica's series.
func checkFleetFlow(t *testing.T, fams map[string]*dto.MetricFamily) {
	t.Helper()
	for _, m := range fams[metricname.RequestsOffered].GetMetric() {
		r := promtext.Labels(m)["replica"]
		offered := m.GetCounter().GetValue()
		if got := sumFamily(fams[metricname.Requests], r) + sumFamily(fams[metricname.RequestsInFlight], r); got != offered {
			t.Errorf("replica %s: offered %g, dispositions + in flight %g", r, offered, got)
		}
	}
}

// sumFamily sums the series of f of one replica.
func sumFamily(f *dto.MetricFamily, replica string) float64 {
	var s float64
	for _, m := range f.GetMetric() {
		if promtext.Labels(m)["replica"] == replica {
			s += m.GetCounter().GetValue() + m.GetGauge().GetValue()
		}
	}
	return s
}

// checkReplicaInfo: each replica's target_info has its replica and file_sd
// labels, and its server's own series are re-exported with its replica
// label.
func checkReplicaInfo(t *testing.T, d *daemon, addrs []string) {
	t.Helper()
	fams := promtext.Families(t, d.reg)
	deadline := time.Now().Add(10 * time.Second)
	for _, a := range addrs {
		for {
			info, scraped := false, false
			for _, m := range fams[metricname.TargetInfo].GetMetric() {
				l := promtext.Labels(m)
				info = info || l["replica"] == a && l["zone"] == "a" && l["target"] == "fleet" && l["model"] == "sim-llama"
			}
			for _, m := range fams["vllm:num_requests_running"].GetMetric() {
				scraped = scraped || promtext.Labels(m)["replica"] == a
			}
			if info && scraped {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("replica %s: target_info with its labels %v, scraped series %v", a, info, scraped)
			}
			time.Sleep(200 * time.Millisecond)
			fams = promtext.Families(t, d.reg)
		}
	}
}

// checkReplicaPages: the status page shows a row per replica under its
// target and the discovery state; the pair page and the results API take
// a replica and name it.
func checkReplicaPages(t *testing.T, d *daemon, addr string) {
	t.Helper()
	srv := httptest.NewServer(d.routes())
	defer srv.Close()
	get := func(path string) string {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var b strings.Builder
		if _, err := io.Copy(&b, resp.Body); err != nil || resp.StatusCode != 200 {
			t.Fatalf("GET %s: %d %v", path, resp.StatusCode, err)
		}
		return b.String()
	}
	for _, path := range []string{"/api/v1/results?replica=no-port", "/pair?target=fleet&probe=chat&replica=no-port", "/probe?target=fleet&probe=chat&replica=no-port"} {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("GET %s: %d, want 400 for a replica that is not a host:port", path, resp.StatusCode)
		}
	}
	page := get("/")
	for _, want := range []string{`data-replica="` + addr + `"`, "file_sd discovery: 3 replicas probed", "@&nbsp;" + addr} {
		if !strings.Contains(page, want) {
			t.Errorf("status page lacks %q", want)
		}
	}
	q := url.Values{"target": {"fleet"}, "probe": {"chat"}, "replica": {addr}}.Encode()
	if pair := get("/pair?" + q); !strings.Contains(pair, "fleet / chat @ "+addr) {
		t.Errorf("pair page does not name replica %s", addr)
	}
	if body := get("/probe?" + q); !strings.Contains(body, `vllm_probe_success{probe="chat",replica="`+addr+`",target="fleet"}`) {
		t.Errorf("/probe of replica %s:\n%s", addr, body)
	}
	var res struct{ Data []ledger.Record }
	for deadline := time.Now().Add(10 * time.Second); len(res.Data) == 0 && time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if err := json.Unmarshal([]byte(get("/api/v1/results?"+q)), &res); err != nil {
			t.Fatal(err)
		}
	}
	if len(res.Data) == 0 || slices.ContainsFunc(res.Data, func(r ledger.Record) bool { return r.Replica != addr }) {
		t.Errorf("results of replica %s: %d records, other replicas among them", addr, len(res.Data))
	}
}

// TestFleetDropsAndFailures: with max_replicas 1 and two replicas in the
// file, the first by address is probed and the other counted as dropped;
// a file that no longer parses fails the refresh, is counted and shown on
// the status page, and the last set keeps being probed.
func TestFleetDropsAndFailures(t *testing.T) {
	addrs := sorted(startReplicas(t, 2))
	dir := t.TempDir()
	writeFileSD(t, dir, addrs)
	cfgPath := testfile.Write(t, dir, "c.yml", `targets:
  - name: fleet
    model: sim-llama
    metrics_path: ""
    max_replicas: 1
    discovery: {file_sd: {files: [fleet.json], refresh: 1s}}
probes:
  - name: chat
    api: chat
    rate: 10
    workload: {prompts: [{messages: [{role: user, content: hi}]}]}
    quality: {finish_reasons: [stop, length]}
`)
	d := startInProcess(t, cfgPath)
	defer d.closeLedger()
	defer d.shutdown()
	fams := waitReplicas(t, d, addrs[:1])
	if got := fams[metricname.DiscoveryReplicasDropped].GetMetric(); len(got) != 1 || got[0].GetCounter().GetValue() < 1 {
		t.Errorf("dropped replicas %v, want the second counted", got)
	}

	testfile.Write(t, dir, "fleet.json", `[{"targets": [`)
	deadline := time.Now().Add(10 * time.Second)
	for {
		fams = promtext.Families(t, d.reg)
		f := fams[metricname.DiscoveryFailures].GetMetric()
		if len(f) == 1 && f[0].GetCounter().GetValue() > 0 {
			if l := promtext.Labels(f[0]); l["mechanism"] != "file_sd" || l["target"] != "fleet" {
				t.Errorf("failure labels %v", l)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no discovery failure counted")
		}
		time.Sleep(100 * time.Millisecond)
	}
	if st := d.fleet.state("fleet"); st == nil || !strings.Contains(st.Err, "fleet.json") || st.ErrAt.IsZero() || st.Replicas != 1 || st.Dropped != 1 {
		t.Errorf("discovery state %+v, want the failure naming the file, 1 probed, 1 dropped", st)
	}
	rec := httptest.NewRecorder()
	d.handleStatus(rec, httptest.NewRequest(http.MethodGet, "/", nil))
	if page := rec.Body.String(); !strings.Contains(page, "last good set kept") || !strings.Contains(page, "1 beyond max_replicas not probed") {
		t.Errorf("status page does not show the failing discovery and the dropped replica")
	}
	waitReplicas(t, d, addrs[:1]) // still probed
}

// TestResultsAndPairOfAFleet runs a fleet with a gateway and two replicas,
// and a target with the same replicas and no gateway. /api/v1/results
// without replica gives the gateway's records only (what it gives for a
// static target), replica=* every pair's, replica=host:port that
// replica's; the gateway's /pair links its replicas' pages, and /pair of
// a target without a gateway asks for a replica.
func TestResultsAndPairOfAFleet(t *testing.T) {
	addrs := startReplicas(t, 3)
	gateway, replicas := addrs[0], addrs[1:]
	dir := t.TempDir()
	writeFileSD(t, dir, replicas)
	cfgPath := testfile.Write(t, dir, "c.yml", fmt.Sprintf(`global:
  ledger: {path: %q}
targets:
  - name: fleet
    url: http://%s
    model: sim-llama
    discovery: {file_sd: {files: [fleet.json], refresh: 1s}}
  - name: pods
    model: sim-llama
    discovery: {file_sd: {files: [fleet.json], refresh: 1s}}
`+fleetChatProbe, filepath.Join(dir, "ledger.jsonl"), gateway))
	d := startInProcess(t, cfgPath)
	srv := httptest.NewServer(d.routes())
	defer srv.Close()
	get := func(path string, want int) string {
		t.Helper()
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil || resp.StatusCode != want {
			t.Fatalf("GET %s: %d %v, want %d:\n%s", path, resp.StatusCode, err, want, b)
		}
		return string(b)
	}
	results := func(replica string) map[string]int {
		t.Helper()
		q := url.Values{"target": {"fleet"}, "probe": {"chat"}, "limit": {"1000"}}
		if replica != "" {
			q.Set("replica", replica)
		}
		var res struct{ Data []ledger.Record }
		if err := json.Unmarshal([]byte(get("/api/v1/results?"+q.Encode(), 200)), &res); err != nil {
			t.Fatal(err)
		}
		per := map[string]int{}
		for _, r := range res.Data {
			per[r.Replica]++
		}
		return per
	}
	deadline := time.Now().Add(15 * time.Second)
	for len(results("*")) < 3 && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}

	all := results("*")
	if len(all) != 3 || all[""] == 0 {
		t.Fatalf("replica=*: records per replica %v, want the gateway's and both replicas'", all)
	}
	if got := results(""); len(got) != 1 || got[""] == 0 {
		t.Errorf("no replica: records per replica %v, want the gateway's only", got)
	}
	if got := results(replicas[1]); len(got) != 1 || got[replicas[1]] == 0 {
		t.Errorf("replica=%s: records per replica %v, want that replica's only", replicas[1], got)
	}

	page := get("/pair?target=fleet&probe=chat", 200)
	for _, a := range replicas {
		href := "pair?" + (url.Values{"probe": {"chat"}, "replica": {a}, "target": {"fleet"}}).Encode()
		if !strings.Contains(page, html.EscapeString(href)) {
			t.Errorf("gateway's pair page lacks the link %q to replica %s", href, a)
		}
	}
	if page := get("/pair?target=fleet&probe=chat&replica="+url.QueryEscape(replicas[0]), 200); strings.Contains(page, `id="replicas"`) {
		t.Error("a replica's pair page lists replicas")
	}
	body := get("/pair?target=pods&probe=chat", http.StatusBadRequest)
	if !strings.Contains(body, `target "pods" has no gateway (url), only replicas`) || !slices.ContainsFunc(replicas, func(a string) bool { return strings.Contains(body, a) }) {
		t.Errorf("/pair of a target without gateway: %s", body)
	}
	get("/pair?target=fleet&probe=chat&replica=*", http.StatusBadRequest)
	get("/probe?target=fleet&probe=chat&replica=*", http.StatusBadRequest)
}
