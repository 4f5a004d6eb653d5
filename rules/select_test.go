package rules_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vllm-prober/vllm-prober/config"
	"github.com/vllm-prober/vllm-prober/rules"
	"github.com/vllm-prober/vllm-prober/rules/internal/rulestest"
	"github.com/vllm-prober/vllm-prober/rules/promtest"
)

// TestGenerateHistogramSelection: an alert that needs a histogram a probe
// left out is dropped (or does not cover the probe) with a warning naming
// the probe and the alert, and native-only histograms are read without
// _bucket and le.
func TestGenerateHistogramSelection(t *testing.T) {
	rf, warnings, err := rules.Generate(rulestest.LeanConfig(), rules.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, w := range warnings {
		got = append(got, w.String())
	}
	want := []string{
		`target "a" probe "lean" p99 tpot: dropped: the probe's histograms leave out tpot (vllm_probe_time_per_output_token_seconds), so there is no p99 to judge; add tpot to them to get the alert`,
		`target "a" probe "e2el-only" p99 ttft: dropped: the probe's histograms leave out ttft (vllm_probe_time_to_first_token_seconds), so there is no p99 to judge; add ttft to them to get the alert`,
		`target "a" probe "e2el-only" p99 tpot: dropped: the probe's histograms leave out tpot (vllm_probe_time_per_output_token_seconds), so there is no p99 to judge; add tpot to them to get the alert`,
		`target "b" probe "e2el-only" p99 ttft: dropped: the probe's histograms leave out ttft (vllm_probe_time_to_first_token_seconds), so there is no p99 to judge; add ttft to them to get the alert`,
		`target "b" probe "e2el-only" p99 tpot: dropped: the probe's histograms leave out tpot (vllm_probe_time_per_output_token_seconds), so there is no p99 to judge; add tpot to them to get the alert`,
		`target "a" probe "lean" schedule lag: not judged for this probe: its histograms leave out schedule_lag (vllm_probe_schedule_lag_seconds); add schedule_lag to them to get the alert`,
		`target "a" probe "e2el-only" schedule lag: not judged for this probe: its histograms leave out schedule_lag (vllm_probe_schedule_lag_seconds); add schedule_lag to them to get the alert`,
		`target "b" probe "e2el-only" schedule lag: not judged for this probe: its histograms leave out schedule_lag (vllm_probe_schedule_lag_seconds); add schedule_lag to them to get the alert`,
		`target "b" client TTFT above server: not judged for this target: none of its probes' histograms includes ttft (vllm_probe_time_to_first_token_seconds)`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("warnings:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	var latency []string
	for _, r := range rulestest.Alerts(rf, rules.AlertLatencyHigh) {
		latency = append(latency, r.Labels["target"]+"/"+r.Labels["probe"]+"/"+r.Labels["slo"])
		if r.Labels["probe"] == "lean" {
			want := `histogram_quantile(0.99, sum by (target, probe) (rate(vllm_probe_time_to_first_token_seconds{job="vllm-prober",target="a",probe="lean"}[10m])))` + "\n> 1"
			if r.Expr != want {
				t.Errorf("native-only latency alert:\n%s\nwant:\n%s", r.Expr, want)
			}
		}
	}
	if want := []string{"a/full/ttft", "a/full/tpot", "a/lean/ttft"}; !slices.Equal(latency, want) {
		t.Errorf("latency alerts %v, want %v", latency, want)
	}

	// Only full exports schedule lag, with classic buckets: the classic
	// form alone.
	wantLag := `histogram_quantile(0.99, sum by (target, probe, le) (rate(vllm_probe_schedule_lag_seconds_bucket{job="vllm-prober"}[10m])))` + "\n> 1"
	if lag := rulestest.Alerts(rf, rules.AlertScheduleLag); len(lag) != 1 || lag[0].Expr != wantLag {
		t.Errorf("schedule lag alerts %v, want one with expr %s", lag, wantLag)
	}
	ttft := rulestest.Records(rf)[rules.RecordClientTTFT+"10m"].Expr
	wantTTFT := "(\n" +
		`histogram_quantile(0.5, sum by (target, le) (rate(vllm_probe_time_to_first_token_seconds_bucket{job="vllm-prober"}[10m])))` + "\nor\n" +
		`histogram_quantile(0.5, sum by (target) (rate(vllm_probe_time_to_first_token_seconds{job="vllm-prober"}[10m])))` + "\n)"
	if ttft != wantTTFT {
		t.Errorf("client TTFT record (full classic and lean native):\n%s\nwant:\n%s", ttft, wantTTFT)
	}
}

// TestGenerateNoScheduleLag: with no pair exporting schedule lag the alert
// is left out (it would read nothing) and so is its promtool scenario.
func TestGenerateNoScheduleLag(t *testing.T) {
	cfg := rulestest.LeanConfig()
	cfg.Probes = cfg.Probes[1:]
	cfg.Targets[0].Probes = []string{"lean", "e2el-only"}
	rf, _, err := rules.Generate(cfg, rules.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(rulestest.Alerts(rf, rules.AlertScheduleLag)); n != 0 {
		t.Errorf("%d schedule lag alerts, want none", n)
	}
	lean := cfg.Probes[0]
	lean.Histograms = append(lean.Histograms, config.HistogramScheduleLag)
	rf, _, err = rules.Generate(rulestest.OneProbe(lean), rules.Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := `histogram_quantile(0.99, sum by (target, probe) (rate(vllm_probe_schedule_lag_seconds{job="vllm-prober"}[10m])))` + "\n> 1"
	if lag := rulestest.Alerts(rf, rules.AlertScheduleLag); len(lag) != 1 || lag[0].Expr != want {
		t.Errorf("native-only schedule lag alert %v, want expr %s", lag, want)
	}
	tf, err := promtest.Generate(rulestest.OneProbe(lean), rules.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range tf.Tests {
		for _, s := range g.InputSeries {
			if strings.Contains(s.Series, "_bucket") && !strings.HasPrefix(s.Series, "vllm:") {
				t.Errorf("group %q feeds %s, a histogram the native-only probe has no buckets for", g.Name, s.Series)
			}
		}
	}
}

// TestGenerateTTFASelection: slo.ttfa gets a p99 alert on the TTFA
// histogram only when the probe's histograms select ttfa; otherwise the
// alert is dropped with a warning, as for the other SLOs.
func TestGenerateTTFASelection(t *testing.T) {
	slo := config.SLO{TTFA: rulestest.Sec(4 * time.Second)}
	selected := rulestest.Probe("think", 1, 0.99, slo)
	selected.Histograms = []string{config.HistogramTTFA}
	unselected := rulestest.Probe("think", 1, 0.99, slo)
	unselected.Histograms = []string{config.HistogramTTFT}
	cases := []struct {
		name    string
		probe   config.Probe
		expr    string
		warning string
	}{
		{"selected", selected, `histogram_quantile(0.99, sum by (target, probe, le) (rate(vllm_probe_time_to_first_answer_token_seconds_bucket{job="vllm-prober",target="llama",probe="think"}[10m])))` + "\n> 4", ""},
		{"left out", unselected, "", `target "llama" probe "think" p99 ttfa: dropped: the probe's histograms leave out ttfa (vllm_probe_time_to_first_answer_token_seconds), so there is no p99 to judge; add ttfa to them to get the alert`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rf, warnings, err := rules.Generate(rulestest.OneProbe(tc.probe), rules.Options{})
			if err != nil {
				t.Fatal(err)
			}
			var exprs []string
			for _, r := range rulestest.Alerts(rf, rules.AlertLatencyHigh) {
				if r.Labels["slo"] != "ttfa" {
					t.Errorf("latency alert for slo %q, want only ttfa", r.Labels["slo"])
				}
				exprs = append(exprs, r.Expr)
			}
			if tc.expr == "" && len(exprs) != 0 || tc.expr != "" && (len(exprs) != 1 || exprs[0] != tc.expr) {
				t.Errorf("latency alerts:\n%s\nwant:\n%s", strings.Join(exprs, "\n"), tc.expr)
			}
			var got []string
			for _, w := range warnings {
				if strings.HasPrefix(w.Alert, "p99") {
					got = append(got, w.String())
				}
			}
			if tc.warning == "" && len(got) != 0 || tc.warning != "" && (len(got) != 1 || got[0] != tc.warning) {
				t.Errorf("warnings %q, want %q", got, tc.warning)
			}
		})
	}
}

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
	for _, a := range []string{rules.AlertReplicaFailing, rules.AlertGatewayFailing, rules.AlertOutputChanged, rules.AlertNoReplicas, rules.AlertDiscoveryFailing} {
		if n := len(rulestest.Alerts(rf, a)); n != 0 {
			t.Errorf("%d %s alerts without discovery or fingerprint", n, a)
		}
	}
	if len(rf.Groups) != 3 {
		t.Errorf("%d groups, want 3", len(rf.Groups))
	}
}

// TestGenerateMixedFormsGateway: a target with a gateway whose probes
// export TTFT in both forms (MixedFleetConfig) gets each side of the gateway's `or` in one pair of parentheses, the
// classic and native quantiles joined inside it, and the whole once more
// before the schedule lag alert's comparison.
func TestGenerateMixedFormsGateway(t *testing.T) {
	rf, _, err := rules.Generate(rulestest.MixedFleetConfig(), rules.Options{})
	if err != nil {
		t.Fatal(err)
	}
	quantile := func(q, metric, by, sel string) string {
		return "histogram_quantile(" + q + ", sum by (" + by + ", le) (rate(" + metric + "_bucket" + sel + "[10m])))\nor\n" +
			"histogram_quantile(" + q + ", sum by (" + by + ") (rate(" + metric + sel + "[10m])))"
	}
	sides := func(q, metric, by string) string {
		return "(\n" + quantile(q, metric, by, `{job="vllm-prober",target!~"fleet"}`) + "\n)\nor\n(\n" +
			quantile(q, metric, by, `{job="vllm-prober",target=~"fleet",replica=""}`) + "\n)"
	}
	if got, want := rulestest.Records(rf)[rules.RecordClientTTFT+"10m"].Expr, "(\n"+sides("0.5", "vllm_probe_time_to_first_token_seconds", "target")+"\n)"; got != want {
		t.Errorf("client TTFT record:\n%s\nwant:\n%s", got, want)
	}
	lag := rulestest.Alerts(rf, rules.AlertScheduleLag)
	if want := "(\n" + sides("0.99", "vllm_probe_schedule_lag_seconds", "target, probe") + "\n)\n> 1"; len(lag) != 1 || lag[0].Expr != want {
		t.Errorf("schedule lag alerts %v, want one with expr:\n%s", lag, want)
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

// TestGenerateDiscoveryOnlyReadsLeanHistograms: the replica pairs of a
// target with discovery and no url export the lean histograms (TTFT and
// E2EL) unless the file chose some (docs/design.md, Fleets), and its
// alerts read those series. A p99 alert on another histogram would read
// a series that does not exist and never fire, so it is dropped with a
// warning; a gateway's series and a probe whose file chose histograms
// keep theirs.
func TestGenerateDiscoveryOnlyReadsLeanHistograms(t *testing.T) {
	cfg := rulestest.FleetConfig()
	slo := config.SLO{TTFT: rulestest.Sec(time.Second), TPOT: rulestest.Sec(100 * time.Millisecond)}
	chosen := rulestest.Probe("chosen", 1, 0.99, slo)
	chosen.Histograms, chosen.HistogramsWritten = []string{config.HistogramTTFT, config.HistogramTPOT}, true
	cfg.Probes = []config.Probe{rulestest.Probe("chat", 1, 0.99, slo), chosen}
	rf, warnings, err := rules.Generate(cfg, rules.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var latency []string
	for _, r := range rulestest.Alerts(rf, rules.AlertLatencyHigh) {
		latency = append(latency, r.Labels["target"]+"/"+r.Labels["probe"]+"/"+r.Labels["slo"])
	}
	want := []string{
		"fleet/chat/ttft", "fleet/chat/tpot", "fleet/chosen/ttft", "fleet/chosen/tpot",
		"pool/chat/ttft", "pool/chosen/ttft", "pool/chosen/tpot",
		"static/chat/ttft", "static/chat/tpot", "static/chosen/ttft", "static/chosen/tpot",
	}
	if !slices.Equal(latency, want) {
		t.Errorf("latency alerts %v, want %v", latency, want)
	}
	var got []string
	for _, w := range warnings {
		if w.Target == "pool" && w.Probe == "chat" {
			got = append(got, w.String())
		}
	}
	wantWarnings := []string{
		`target "pool" probe "chat" p99 tpot: dropped, no p99 to judge: the lean histograms of the replica pairs (a target with discovery and no url, no histograms: in the file) leave out tpot (vllm_probe_time_per_output_token_seconds); list tpot in the probe's histograms to get the alert`,
		`target "pool" probe "chat" schedule lag: not judged for this probe: the lean histograms of the replica pairs (a target with discovery and no url, no histograms: in the file) leave out schedule_lag (vllm_probe_schedule_lag_seconds); list schedule_lag in the probe's histograms to get the alert`,
	}
	if !slices.Equal(got, wantWarnings) {
		t.Errorf("warnings about pool/chat:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(wantWarnings, "\n"))
	}
}

// TestGenerateDiscoveryAlerts: every target with discovery gets
// VLLMProbeNoReplicas (a page without a url, where nothing else is
// probed; a ticket behind a gateway, which is still judged) and
// VLLMProberDiscoveryFailing (a ticket: half the refreshes its interval
// makes over the window failed); a static target gets neither. Their
// for: is --health-for.
func TestGenerateDiscoveryAlerts(t *testing.T) {
	rf, _, err := rules.Generate(rulestest.DiscoveryConfig(), rules.Options{HealthFor: 7 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	byTarget := func(alert string) map[string]rules.Rule {
		out := map[string]rules.Rule{}
		for _, r := range rulestest.Alerts(rf, alert) {
			out[r.Labels["target"]] = r
			if r.For != "7m" || r.Annotations["runbook_url"] != rules.DefaultRunbookURL+"#"+strings.ToLower(alert) {
				t.Errorf("%s of %s: for %q, runbook_url %q", alert, r.Labels["target"], r.For, r.Annotations["runbook_url"])
			}
		}
		return out
	}
	none := byTarget(rules.AlertNoReplicas)
	want := map[string]string{"fleet": rules.SeverityTicket, "pool": rules.SeverityPage, "slow": rules.SeverityPage}
	if len(none) != len(want) {
		t.Errorf("%s for %d targets, want fleet, pool and slow, not static", rules.AlertNoReplicas, len(none))
	}
	for target, sev := range want {
		r := none[target]
		if r.Labels["severity"] != sev {
			t.Errorf("%s of %s: severity %q, want %q", rules.AlertNoReplicas, target, r.Labels["severity"], sev)
		}
		if e := `max by (target) (vllm_prober_discovery_replicas{job="vllm-prober",target="` + target + `"}) == 0`; r.Expr != e {
			t.Errorf("%s of %s: expr %q, want %q", rules.AlertNoReplicas, target, r.Expr, e)
		}
	}
	failing := byTarget(rules.AlertDiscoveryFailing)
	// file_sd every 1m and dns every 30s over 15m: half of 15 and of 30
	// refreshes; http_sd every 10m over four refreshes: 2 of 4.
	wantExpr := map[string]string{"fleet": "[15m])) >= 8", "pool": "[15m])) >= 15", "slow": "[40m])) >= 2"}
	if len(failing) != len(wantExpr) {
		t.Errorf("%s for %d targets, want fleet, pool and slow, not static", rules.AlertDiscoveryFailing, len(failing))
	}
	for target, tail := range wantExpr {
		r := failing[target]
		e := `max by (target, mechanism) (increase(vllm_prober_discovery_failures_total{job="vllm-prober",target="` + target + `"}` + tail
		if r.Expr != e || r.Labels["severity"] != rules.SeverityTicket {
			t.Errorf("%s of %s: expr %q, severity %q; want %q, ticket", rules.AlertDiscoveryFailing, target, r.Expr, r.Labels["severity"], e)
		}
	}
}
