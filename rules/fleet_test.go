package rules

import (
	"strings"
	"testing"
	"time"

	"github.com/vllm-prober/vllm-prober/config"
	"github.com/vllm-prober/vllm-prober/discovery"
)

// fleetConfig has a target with a url and discovery (gateway and
// replicas), one with discovery only and a static one; probe chat
// watches its output fingerprint.
func fleetConfig() *config.Config {
	sd := &discovery.Config{FileSD: &discovery.FileSDConfig{Files: []string{"replicas.json"}}}
	chat := testProbe("chat", 0.5, 0.99, config.SLO{TTFT: sec(time.Second)})
	chat.Fingerprint = &config.Fingerprint{Tokens: 16, Confirm: 3}
	return &config.Config{
		Targets: []config.Target{
			{Name: "fleet", URL: "http://gateway:8000", Discovery: sd},
			{Name: "pool", Discovery: sd},
			{Name: "static", URL: "http://vllm:8000"},
		},
		Probes: []config.Probe{chat},
	}
}

// TestGenerateFleetAlerts: the replica alert is generated per page burn
// pair for targets with discovery, the gateway alert only for those with
// a url too, and a static target gets neither; the per-replica series
// are recorded over exactly the windows they read.
func TestGenerateFleetAlerts(t *testing.T) {
	rf, _, err := Generate(fleetConfig(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	count := func(alert string) map[string]int {
		n := map[string]int{}
		for _, r := range alerts(rf, alert) {
			n[r.Labels["target"]]++
			if r.Labels["severity"] != SeverityPage {
				t.Errorf("%s severity %q, want page", alert, r.Labels["severity"])
			}
			for _, w := range []string{r.Labels["long_window"], r.Labels["short_window"]} {
				if _, ok := records(rf)[RecordReplicaAcceptance+w]; !ok {
					t.Errorf("%s reads window %s, not recorded per replica", alert, w)
				}
			}
		}
		return n
	}
	pages := len(alerts(rf, AlertFastBurn)) / 3
	if got := count(AlertReplicaFailing); got["fleet"] != pages || got["pool"] != pages || got["static"] != 0 {
		t.Errorf("replica alerts per target %v, want %d for fleet and pool, none for static", got, pages)
	}
	if got := count(AlertGatewayFailing); got["fleet"] != pages || got["pool"] != 0 || got["static"] != 0 {
		t.Errorf("gateway alerts per target %v, want %d for fleet only", got, pages)
	}
	var recorded []string
	for name := range records(rf) {
		if strings.HasPrefix(name, RecordReplicaAcceptance) {
			recorded = append(recorded, strings.TrimPrefix(name, RecordReplicaAcceptance))
		}
	}
	if len(recorded) != 4 { // 10m, 30m, 6h long; 5m, 10m short
		t.Errorf("per-replica acceptance recorded over %v, want the 4 page windows", recorded)
	}
	r := alerts(rf, AlertReplicaFailing)[0]
	for _, want := range []string{`replica!=""`, "count by (target, probe)", "> 12", ">= 10"} {
		if !strings.Contains(r.Expr, want) {
			t.Errorf("replica alert expr lacks %q:\n%s", want, r.Expr)
		}
	}
	if g := alerts(rf, AlertGatewayFailing)[0]; !strings.Contains(g.Expr, `replica=""`) || !strings.Contains(g.Expr, "\n==\n") {
		t.Errorf("gateway alert expr does not judge the gateway series against every replica:\n%s", g.Expr)
	}
	if rs := alerts(rf, AlertOutputChanged); len(rs) != 3 || rs[0].Labels["severity"] != SeverityTicket ||
		!strings.Contains(rs[0].Expr, "increase(vllm_probe_output_fingerprint_changes_total{") {
		t.Errorf("output changed alerts %v, want a ticket per pair of the fingerprint probe", rs)
	}
}

// TestGenerateNoFleetNoExtraRules: a config without discovery or
// fingerprint gets no fleet records or alerts, and no output group.
func TestGenerateNoFleetNoExtraRules(t *testing.T) {
	rf, _, err := Generate(oneProbe(testProbe("chat", 1, 0.99, config.SLO{})), Options{})
	if err != nil {
		t.Fatal(err)
	}
	for name := range records(rf) {
		if strings.HasPrefix(name, "target_probe_replica:") {
			t.Errorf("record %s without discovery", name)
		}
	}
	for _, a := range []string{AlertReplicaFailing, AlertGatewayFailing, AlertOutputChanged} {
		if n := len(alerts(rf, a)); n != 0 {
			t.Errorf("%d %s alerts without discovery or fingerprint", n, a)
		}
	}
	if len(rf.Groups) != 3 {
		t.Errorf("%d groups, want 3", len(rf.Groups))
	}
}

// TestGenerateFleetTargetLevelSeries: the target-level records and
// alerts of a target with a gateway read only its gateway's series
// (replica=""); those of a target with discovery only and of a static
// target read every series of the pair.
func TestGenerateFleetTargetLevelSeries(t *testing.T) {
	rf, _, err := Generate(fleetConfig(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	acc := records(rf)[RecordAcceptance+"5m"]
	for _, want := range []string{`{job="vllm-prober",target!~"fleet"`, `{job="vllm-prober",target=~"fleet",replica="",disposition="accepted"}`, "\nor\n"} {
		if !strings.Contains(acc.Expr, want) {
			t.Errorf("acceptance record lacks %q:\n%s", want, acc.Expr)
		}
	}
	for _, alert := range []string{AlertLatencyHigh, AlertTargetDown, AlertNotCompleting, AlertInFlightCap} {
		rs := alerts(rf, alert)
		if len(rs) != 3 {
			t.Fatalf("%d %s alerts, want one per target", len(rs), alert)
		}
		for _, r := range rs {
			gw := strings.Contains(r.Expr, `replica=""`)
			if want := r.Labels["target"] == "fleet"; gw != want {
				t.Errorf("%s of %s reads only the gateway's series: %v, want %v\n%s", alert, r.Labels["target"], gw, want, r.Expr)
			}
		}
	}
}
