//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/vllm-prober/vllm-prober/collector/metricname"
	"github.com/vllm-prober/vllm-prober/internal/daemontest"
	"github.com/vllm-prober/vllm-prober/internal/promtext"
	"github.com/vllm-prober/vllm-prober/internal/testfile"
	"github.com/vllm-prober/vllm-prober/simulator"
)

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
