//go:build e2e

package e2e

import (
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/common/model"

	"github.com/vllm-prober/vllm-prober/internal/daemontest"
	"github.com/vllm-prober/vllm-prober/internal/testfile"
	"github.com/vllm-prober/vllm-prober/rules"
	"github.com/vllm-prober/vllm-prober/simulator"
)

// fleetAlertConfig probes a gateway and the replicas behind it, found by
// file_sd, with fleetProbe: the 5s short page window of the 60-times
// scaled rules holds 50 requests per replica.
const fleetAlertConfig = `targets:
  - name: fleet
    url: %s
    model: sim-llama
    metrics_path: ""
    discovery: {file_sd: {files: [fleet.json], refresh: 1s}}
` + fleetProbe

// fleetPromConfig scrapes the prober every second and evaluates the rules
// every second; no Alertmanager: the alerts are read from Prometheus.
const fleetPromConfig = `global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s
rule_files: [rules.yml]
scrape_configs:
  - job_name: vllm-prober
    static_configs: [{targets: ['%s']}]
`

// TestFleetAlerts runs the generated rules, windows scaled 60 times down,
// in real Prometheus over a gateway and four replicas behind it. One
// replica answering half its requests with HTTP 500 pages
// VLLMProbeReplicaFailing naming that replica, and no other replica and
// not VLLMProbeGatewayFailing; once it heals, its page resolves; then
// the gateway answers 502 to most requests while every replica serves,
// and VLLMProbeGatewayFailing pages and VLLMProbeReplicaFailing does not.
func TestFleetAlerts(t *testing.T) {
	sims, addrs := startFleetSims(t, 4, simulator.Faults{HTTP500: 0.5})
	for _, s := range sims[1:] {
		s.SetFaults(simulator.Faults{})
	}
	gw := newGateway(t, addrs)
	dir := t.TempDir()
	writeTargetGroups(t, dir, addrs)
	cfg := testfile.Write(t, dir, "prober.yml", fmt.Sprintf(fleetAlertConfig, gw.url))
	rulesPath := filepath.Join(dir, "rules.yml")
	if code, out := daemontest.Run(t, binary, "rules", "--config.file="+cfg, "--window-scale="+alertWindowScale,
		"--health-for=10m", "--output="+rulesPath); code != 0 {
		t.Fatalf("vllm-prober rules: exit %d\n%s", code, out)
	}
	checkRules(t, rulesPath)
	p := daemontest.Start(t, binary, "--config.file="+cfg)
	promAddr := daemontest.FreeAddr(t)
	promCfg := testfile.Write(t, dir, "prometheus.yml", fmt.Sprintf(fleetPromConfig, p.Addr))
	prom := startTool(t, "prometheus", promAddr, "--config.file="+promCfg,
		"--storage.tsdb.path="+filepath.Join(dir, "tsdb"), "--web.listen-address="+promAddr)
	t.Cleanup(func() {
		if t.Failed() {
			alerts, err := promAlerts(prom)
			t.Logf("Prometheus alerts (%v): %+v\nprober logs:\n%s", err, alerts, tailString(p.Logs(), 3000))
		}
	})
	replica := map[string]string{"alertname": rules.AlertReplicaFailing, "target": "fleet", "probe": "chat"}
	gateway := map[string]string{"alertname": rules.AlertGatewayFailing, "target": "fleet", "probe": "chat"}

	start := time.Now()
	waitFleetAlert(t, prom, 120*time.Second, "VLLMProbeReplicaFailing naming "+addrs[0], func(firing []map[string]string) bool {
		for _, l := range firing {
			if matches(l, gateway) || matches(l, replica) && l["replica"] != addrs[0] {
				t.Fatalf("%s fires while only replica %s fails: %v", l["alertname"], addrs[0], l)
			}
		}
		return anyMatch(firing, with(replica, "replica", addrs[0]))
	})
	t.Logf("%s paged %s after start", rules.AlertReplicaFailing, time.Since(start).Round(time.Second))

	// The replica's short windows hold its failures until the longest of
	// them has passed: until then its page is right, so the gateway breaks
	// only after it has resolved and those windows are clean.
	sims[0].SetFaults(simulator.Faults{})
	healed := time.Now()
	waitFleetAlert(t, prom, 60*time.Second, "VLLMProbeReplicaFailing resolved", func(firing []map[string]string) bool {
		return !anyMatch(firing, replica)
	})
	time.Sleep(time.Until(healed.Add(longestShortWindow(t, rulesPath, rules.AlertReplicaFailing) + 3*time.Second)))
	gw.failTenths(8)
	start = time.Now()
	waitFleetAlert(t, prom, 150*time.Second, "VLLMProbeGatewayFailing with VLLMProbeReplicaFailing resolved", func(firing []map[string]string) bool {
		return anyMatch(firing, gateway) && !anyMatch(firing, replica)
	})
	t.Logf("%s paged %s after the gateway broke", rules.AlertGatewayFailing, time.Since(start).Round(time.Second))
	until := time.Now().Add(10 * time.Second)
	waitFleetAlert(t, prom, 15*time.Second, "10s of the gateway page alone", func(firing []map[string]string) bool {
		if anyMatch(firing, replica) {
			t.Fatalf("%s fires while every replica serves: %v", rules.AlertReplicaFailing, firing)
		}
		return time.Now().After(until)
	})
}

// longestShortWindow is the longest short_window label of alert's rules
// in the rule file at path.
func longestShortWindow(t *testing.T, path, alert string) time.Duration {
	t.Helper()
	var longest time.Duration
	for _, g := range readRuleFile(t, path).Groups {
		for _, r := range g.Rules {
			if r.Alert != alert {
				continue
			}
			d, err := model.ParseDuration(r.Labels["short_window"])
			if err != nil {
				t.Fatalf("%s: rule %s: short_window: %v", path, alert, err)
			}
			longest = max(longest, time.Duration(d))
		}
	}
	if longest == 0 {
		t.Fatalf("%s: no rule %s with a short_window", path, alert)
	}
	return longest
}

// waitFleetAlert polls Prometheus's firing alerts every second until done
// holds for their labels.
func waitFleetAlert(t *testing.T, prom *toolProc, timeout time.Duration, what string, done func(firing []map[string]string) bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		alerts, err := promAlerts(prom)
		if err != nil {
			t.Fatal(err)
		}
		var firing []map[string]string
		for _, a := range alerts {
			if a.State == "firing" {
				firing = append(firing, a.Labels)
			}
		}
		if done(firing) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s; firing: %v", timeout, what, firing)
		}
		time.Sleep(time.Second)
	}
}

// anyMatch reports whether some label set has every label of want.
func anyMatch(sets []map[string]string, want map[string]string) bool {
	for _, l := range sets {
		if matches(l, want) {
			return true
		}
	}
	return false
}

// gateway is a round-robin reverse proxy in front of replicas, like a
// router or ingress, that can be told to fail: it then answers 502 to
// the given tenths of requests (in a fixed cycle of ten) without asking
// a replica.
type gateway struct {
	url string

	mu    sync.Mutex
	next  int
	n     int // requests seen, for the failure cycle
	tenth int // requests out of each ten answered 502
}

func newGateway(t *testing.T, addrs []string) *gateway {
	t.Helper()
	g := &gateway{}
	proxy := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			g.mu.Lock()
			addr := addrs[g.next%len(addrs)]
			g.next++
			g.mu.Unlock()
			r.SetURL(&url.URL{Scheme: "http", Host: addr})
		},
		FlushInterval: -1, // stream every event as it comes
		// Streams cut when the test ends are no news.
		ErrorLog: log.New(io.Discard, "", 0),
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		g.mu.Lock()
		fail := g.n%10 < g.tenth
		g.n++
		g.mu.Unlock()
		if fail {
			http.Error(w, "upstream connect error", http.StatusBadGateway)
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	g.url = srv.URL
	return g
}

// failTenths makes the gateway answer 502 to n of every ten requests.
func (g *gateway) failTenths(n int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.tenth = n
}
