package rules_test

import (
	"strings"
	"testing"

	"github.com/vllm-prober/vllm-prober/config"
	"github.com/vllm-prober/vllm-prober/rules"
	"github.com/vllm-prober/vllm-prober/rules/internal/rulestest"
)

// TestGenerateFleetAlerts: the replica alert is generated per page burn
// pair for targets with discovery, the gateway alert only for those with
// a url too, and a static target gets neither; the per-replica series
// are recorded over exactly the windows they read.
func TestGenerateFleetAlerts(t *testing.T) {
	rf, _, err := rules.Generate(rulestest.FleetConfig(), rules.Options{})
	if err != nil {
		t.Fatal(err)
	}
	count := func(alert string) map[string]int {
		n := map[string]int{}
		for _, r := range rulestest.Alerts(rf, alert) {
			n[r.Labels["target"]]++
			if r.Labels["severity"] != rules.SeverityPage {
				t.Errorf("%s severity %q, want page", alert, r.Labels["severity"])
			}
			for _, w := range []string{r.Labels["long_window"], r.Labels["short_window"]} {
				if _, ok := rulestest.Records(rf)[rules.RecordReplicaAcceptance+w]; !ok {
					t.Errorf("%s reads window %s, not recorded per replica", alert, w)
				}
			}
		}
		return n
	}
	pages := len(rulestest.Alerts(rf, rules.AlertFastBurn)) / 3
	if got := count(rules.AlertReplicaFailing); got["fleet"] != pages || got["pool"] != pages || got["static"] != 0 {
		t.Errorf("replica alerts per target %v, want %d for fleet and pool, none for static", got, pages)
	}
	if got := count(rules.AlertGatewayFailing); got["fleet"] != pages || got["pool"] != 0 || got["static"] != 0 {
		t.Errorf("gateway alerts per target %v, want %d for fleet only", got, pages)
	}
	var recorded []string
	for name := range rulestest.Records(rf) {
		if strings.HasPrefix(name, rules.RecordReplicaAcceptance) {
			recorded = append(recorded, strings.TrimPrefix(name, rules.RecordReplicaAcceptance))
		}
	}
	if len(recorded) != 4 { // 10m, 30m, 6h long; 5m, 10m short
		t.Errorf("per-replica acceptance recorded over %v, want the 4 page windows", recorded)
	}
	r := rulestest.Alerts(rf, rules.AlertReplicaFailing)[0]
	for _, want := range []string{`replica!=""`, "count by (target, probe)", "> 12", ">= 10"} {
		if !strings.Contains(r.Expr, want) {
			t.Errorf("replica alert expr lacks %q:\n%s", want, r.Expr)
		}
	}
	if g := rulestest.Alerts(rf, rules.AlertGatewayFailing)[0]; !strings.Contains(g.Expr, `replica=""`) || !strings.Contains(g.Expr, "\n==\n") {
		t.Errorf("gateway alert expr does not judge the gateway series against every replica:\n%s", g.Expr)
	}
	if rs := rulestest.Alerts(rf, rules.AlertOutputChanged); len(rs) != 3 || rs[0].Labels["severity"] != rules.SeverityTicket ||
		!strings.Contains(rs[0].Expr, "increase(vllm_probe_output_fingerprint_changes_total{") {
		t.Errorf("output changed alerts %v, want a ticket per pair of the fingerprint probe", rs)
	}
}

// TestGenerateNoFleetNoExtraRules: a config without discovery or
// fingerprint gets no fleet records or alerts, and no output group.
func TestGenerateNoFleetNoExtraRules(t *testing.T) {
	rf, _, err := rules.Generate(rulestest.OneProbe(rulestest.Probe("chat", 1, 0.99, config.SLO{})), rules.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for name := range rulestest.Records(rf) {
		if strings.HasPrefix(name, "target_probe_replica:") {
			t.Errorf("record %s without discovery", name)
		}
	}
	for _, a := range []string{rules.AlertReplicaFailing, rules.AlertGatewayFailing, rules.AlertOutputChanged} {
		if n := len(rulestest.Alerts(rf, a)); n != 0 {
			t.Errorf("%d %s alerts without discovery or fingerprint", n, a)
		}
	}
	if len(rf.Groups) != 3 {
		t.Errorf("%d groups, want 3", len(rf.Groups))
	}
}

// TestGenerateFleetTargetLevelSeries: the target-level records and
// alerts of a target with a gateway, the client TTFT record and the
// schedule lag alert among them, read only its gateway's series
// (replica=""); those of a target with discovery only and of a static
// target read every series of the pair.
func TestGenerateFleetTargetLevelSeries(t *testing.T) {
	rf, _, err := rules.Generate(rulestest.FleetConfig(), rules.Options{})
	if err != nil {
		t.Fatal(err)
	}
	acc := rulestest.Records(rf)[rules.RecordAcceptance+"5m"]
	for _, want := range []string{`{job="vllm-prober",target!~"fleet"`, `{job="vllm-prober",target=~"fleet",replica="",disposition="accepted"}`, "\nor\n"} {
		if !strings.Contains(acc.Expr, want) {
			t.Errorf("acceptance record lacks %q:\n%s", want, acc.Expr)
		}
	}
	// The client side of the TTFT comparison and the schedule lag alert
	// are target-level too; both sides of the `or` are parenthesised, and
	// the whole before the lag threshold's comparison.
	ttft := rulestest.Records(rf)[rules.RecordClientTTFT+"10m"].Expr
	lag := rulestest.Alerts(rf, rules.AlertScheduleLag)
	if len(lag) != 1 {
		t.Fatalf("%d schedule lag alerts, want 1", len(lag))
	}
	for name, expr := range map[string]string{"client TTFT record": ttft, "schedule lag alert": lag[0].Expr} {
		for _, want := range []string{`_bucket{job="vllm-prober",target!~"fleet"}[10m]`, `_bucket{job="vllm-prober",target=~"fleet",replica=""}[10m]`, ")\nor\n("} {
			if !strings.Contains(expr, want) {
				t.Errorf("%s lacks %q:\n%s", name, want, expr)
			}
		}
	}
	if !strings.HasPrefix(lag[0].Expr, "(\n(\n") || !strings.HasSuffix(lag[0].Expr, ")\n)\n> 1") {
		t.Errorf("schedule lag alert does not compare the whole `or` with its threshold:\n%s", lag[0].Expr)
	}
	for _, alert := range []string{rules.AlertLatencyHigh, rules.AlertTargetDown, rules.AlertNotCompleting, rules.AlertInFlightCap} {
		rs := rulestest.Alerts(rf, alert)
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

// TestRateSplitWarning: with rate_split, rules warns for each discovery
// target whose max_replicas allows more replicas than the longest page
// short window can judge (10 requests each), and not when max_replicas
// fits or each replica gets the whole rate.
func TestRateSplitWarning(t *testing.T) {
	replicaWarnings := func(cfg *config.Config) map[string]string {
		_, warnings, err := rules.Generate(cfg, rules.Options{})
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]string{}
		for _, w := range warnings {
			if w.Alert == "replica failing" {
				got[w.Target] = w.Message
			}
		}
		return got
	}
	// 0.5/s over the 10m short window of the 6x page pair: 300 requests,
	// 10 for each of 30 replicas.
	cfg := rulestest.FleetConfig()
	cfg.Probes[0].RateSplit = true
	got := replicaWarnings(cfg)
	if len(got) != 2 || got["static"] != "" {
		t.Fatalf("rate_split warnings for %v, want fleet and pool only", got)
	}
	for _, target := range []string{"fleet", "pool"} {
		if !strings.Contains(got[target], "at most 30 replicas (max_replicas 256)") {
			t.Errorf("%s: warning %q does not name 30 replicas of the default 256", target, got[target])
		}
	}
	cfg.Targets[0].MaxReplicas, cfg.Targets[1].MaxReplicas = 30, 31
	if got := replicaWarnings(cfg); len(got) != 1 || !strings.Contains(got["pool"], "(max_replicas 31)") {
		t.Errorf("with max_replicas 30 and 31: warnings %v, want pool's only", got)
	}
	cfg.Probes[0].RateSplit = false
	cfg.Targets[0].MaxReplicas, cfg.Targets[1].MaxReplicas = 0, 0
	if got := replicaWarnings(cfg); len(got) != 0 {
		t.Errorf("without rate_split: warnings %v, want none", got)
	}
}
