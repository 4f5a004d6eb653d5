//go:build e2e

package rules_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/vllm-prober/vllm-prober/collector/metricname"
	"github.com/vllm-prober/vllm-prober/config"
	"github.com/vllm-prober/vllm-prober/discovery"
	"github.com/vllm-prober/vllm-prober/rules"
	"github.com/vllm-prober/vllm-prober/rules/internal/plan"
	"github.com/vllm-prober/vllm-prober/rules/internal/rulestest"
)

// fleetSeries is one series set of the hand-written exposition: a pair's
// gateway or static series (replica "") or one replica's, failing every
// request or none.
type fleetSeries struct {
	target, replica string
	failing         bool
}

// fleetExposition writes the counters the collector exports for each
// series after elapsed seconds at rate requests per second: offered,
// every disposition, and the failure reasons the rules read.
func fleetExposition(series []fleetSeries, rate, elapsed float64) string {
	var b strings.Builder
	n := float64(int(rate * elapsed))
	write := func(name, kind string, each func(fs fleetSeries, labels string)) {
		fmt.Fprintf(&b, "# TYPE %s %s\n", name, kind)
		for _, fs := range series {
			labels := fmt.Sprintf(`target=%q,probe="chat"`, fs.target)
			if fs.replica != "" {
				labels += fmt.Sprintf(`,replica=%q`, fs.replica)
			}
			each(fs, labels)
		}
	}
	write(metricname.RequestsOffered, "counter", func(_ fleetSeries, l string) { fmt.Fprintf(&b, "%s{%s} %g\n", metricname.RequestsOffered, l, n) })
	write(metricname.Requests, "counter", func(fs fleetSeries, l string) {
		ok, failed := n, 0.0
		if fs.failing {
			ok, failed = 0, n
		}
		fmt.Fprintf(&b, "%s{%s,disposition=\"accepted\"} %g\n", metricname.Requests, l, ok)
		fmt.Fprintf(&b, "%s{%s,disposition=\"server_failure\"} %g\n", metricname.Requests, l, failed)
	})
	write(metricname.Failures, "counter", func(fs fleetSeries, l string) {
		failed := 0.0
		if fs.failing {
			failed = n
		}
		fmt.Fprintf(&b, "%s{%s,reason=\"http_5xx\"} %g\n", metricname.Failures, l, failed)
		for _, r := range plan.AbandonedReasons {
			fmt.Fprintf(&b, "%s{%s,reason=%q} 0\n", metricname.Failures, l, r)
		}
	})
	return b.String()
}

// TestFleetAlertsInPrometheus: a real Prometheus runs the generated rules
// against hand-written exposition text with replica labels. Target
// replica-down has one of four replicas failing behind a healthy gateway,
// gateway-down a failing gateway in front of four healthy replicas, all-down
// every replica and its gateway failing, and static a failing target
// without discovery. VLLMProbeReplicaFailing must fire for the one
// replica of replica-down only, VLLMProbeGatewayFailing for gateway-down
// only; the pair's fast burn fires for every target but replica-down,
// whose gateway passes.
func TestFleetAlertsInPrometheus(t *testing.T) {
	sd := &discovery.Config{FileSD: &discovery.FileSDConfig{Files: []string{"replicas.json"}}}
	cfg := &config.Config{
		Targets: []config.Target{
			{Name: "replica-down", URL: "http://a:8000", Discovery: sd},
			{Name: "gateway-down", URL: "http://b:8000", Discovery: sd},
			{Name: "all-down", URL: "http://c:8000", Discovery: sd},
			{Name: "static", URL: "http://d:8000"},
		},
		Probes: []config.Probe{rulestest.Probe("chat", 10, 0.99, config.SLO{})},
	}
	var series []fleetSeries
	for _, tg := range []string{"replica-down", "gateway-down", "all-down"} {
		series = append(series, fleetSeries{tg, "", tg != "replica-down"})
		for i, r := range rulestest.Replicas {
			series = append(series, fleetSeries{tg, r, tg == "all-down" || tg == "replica-down" && i == 0})
		}
	}
	series = append(series, fleetSeries{"static", "", true})
	start := time.Now()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		fmt.Fprint(w, fleetExposition(series, 10, time.Since(start).Seconds()))
	}))
	defer srv.Close()

	rf, _, err := rules.Generate(cfg, rules.Options{WindowScale: 1.0 / 60, MinRequests: 5})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	base := runPrometheus(t, dir, rf, srv.Listener.Addr().String())

	byKey := func(alert string) (string, error) {
		got, err := promQuery(base, fmt.Sprintf(`label_join(count by (target, replica) (ALERTS{alertname=%q,alertstate="firing"}), "key", "/", "target", "replica")`, alert), "key")
		keys := make([]string, 0, len(got))
		for k := range got {
			keys = append(keys, k)
		}
		return strings.Join(keys, ","), err
	}
	want := map[string]string{rules.AlertReplicaFailing: "replica-down/" + rulestest.Replicas[0], rules.AlertGatewayFailing: "gateway-down/"}
	deadline := time.Now().Add(2 * time.Minute)
	for alert, key := range want {
		for {
			got, err := byKey(alert)
			if err == nil && got == key {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s firing for %q (err %v), want %q\nprometheus:\n%s", alert, got, err, key, promLog(dir))
			}
			time.Sleep(time.Second)
		}
	}
	// Both fire; for a few more evaluations nothing else does, and the
	// pair's own fast burn pages for the targets whose users' path fails:
	// the gateway (gateway-down, all-down) or a static target, never
	// replica-down, whose gateway passes.
	for range 5 {
		time.Sleep(time.Second)
		for alert, key := range want {
			if got, err := byKey(alert); err != nil || got != key {
				t.Errorf("%s firing for %q (err %v), want only %q", alert, got, err, key)
			}
		}
	}
	got, err := promQuery(base, fmt.Sprintf(`count by (target) (ALERTS{alertname=%q,alertstate="firing"})`, rules.AlertFastBurn), "target")
	if err != nil || len(got) != 3 || got["gateway-down"] == 0 || got["all-down"] == 0 || got["static"] == 0 {
		t.Errorf("fast burn firing for %v (err %v), want gateway-down, all-down and static", got, err)
	}
}
