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

	"github.com/vllm-prober/vllm-prober/internal/testfile"
	"github.com/vllm-prober/vllm-prober/probe/ledger"
)

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
