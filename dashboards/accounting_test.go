package dashboards

import (
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/vllm-prober/vllm-prober/collector/metricname"
	"github.com/vllm-prober/vllm-prober/config"
	"github.com/vllm-prober/vllm-prober/discovery"
	"github.com/vllm-prober/vllm-prober/rules"
)

// pairSeries is expr over the series the rules judge a (target, probe)
// by (docs/design.md, section 9): a target with a gateway (url and
// discovery) by its gateway's series (replica=""), one with discovery
// only by its replicas' together. A static target has only series
// without a replica, so the first side holds it; the dashboards do not
// know which targets have a gateway, so the gateway's side wins where
// both exist, as the rules' `or` of the two sides does.
func pairSeries(expr func(matchers, window string) string, m, window string) string {
	return "(\n" + expr(m+`,replica=""`, window) + "\n)\nor\n(\n" + expr(m+`,replica!=""`, window) + "\n)"
}

func inFlightExpr(matchers, _ string) string {
	return "sum by (target, probe) (" + metricname.RequestsInFlight + "{" + matchers + "})"
}

// TestAccountingPanelsMatchRules: the panels that show acceptance,
// goodput, offered and completed requests compute them with the recording
// rules' PromQL (rules.AcceptanceExpr and friends), over the dashboard's
// variables and intervals instead of the job and a fixed window, and over
// the series the rules read: a gateway's alone where a target has one, so
// its replicas' requests do not mix into the numbers its objective and
// burn alerts judge.
func TestAccountingPanelsMatchRules(t *testing.T) {
	const (
		m   = `target=~"$target",probe=~"$probe"`
		obj = `target_probe:vllm_probe_objective:ratio{target=~"$target",probe=~"$probe"}`
	)
	want := map[string]string{
		"Acceptance ratio vs objective/A":       pairSeries(rules.AcceptanceExpr, m, "$__rate_interval"),
		"Acceptance (time range)/A":             pairSeries(rules.AcceptanceExpr, m, "$__range"),
		"Error budget remaining (time range)/A": "1 - (\n1 - (\n" + pairSeries(rules.AcceptanceExpr, m, "$__range") + "\n)\n)\n/ on (target, probe) (1 - " + obj + ")",
		"Error budget burn rate/A":              "(1 - (\n" + pairSeries(rules.AcceptanceExpr, m, "$__rate_interval") + "\n))\n/ on (target, probe) (1 - " + obj + ")",
		"Goodput/A":                             pairSeries(rules.GoodputExpr, m, "$__rate_interval"),
		"Offered vs completed/A":                pairSeries(rules.OfferedExpr, m, "$__rate_interval"),
		"Offered vs completed/B":                pairSeries(rules.CompletedExpr, m, "$__rate_interval"),
		"Offered vs completed/C":                pairSeries(inFlightExpr, m, ""),
		"Replicas: acceptance and TTFT p99/A":   rules.ReplicaAcceptanceExpr(m+`,replica!=""`, "$__range"),
		"Gateway vs replicas acceptance/A":      rules.AcceptanceExpr(m+`,replica=""`, "$__rate_interval"),
		"Gateway vs replicas acceptance/B":      rules.AcceptanceExpr(m+`,replica!=""`, "$__rate_interval"),
	}
	qs, err := Queries()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, q := range qs {
		if q.Dashboard == "overview.json" {
			got[q.Panel+"/"+q.RefID] = q.Expr
		}
	}
	for panel, expr := range want {
		t.Run(panel, func(t *testing.T) {
			if got[panel] != expr {
				t.Errorf("panel query\n%s\nwant the rules' PromQL\n%s", got[panel], expr)
			}
		})
	}
}

// TestBurnPanelsNameTheAlerts: the burn rate panel that reads the
// recording rules shows the long window of every burn alert the rules
// generate for a probe fast enough to need no widening, and the burn rate
// panels' descriptions give each alert's factor with its windows, as
// rules.Generate writes them (docs/alerts.md, "Why these windows").
func TestBurnPanelsNameTheAlerts(t *testing.T) {
	cfg := &config.Config{
		Targets: []config.Target{{Name: "t"}},
		Probes:  []config.Probe{{Name: "p", Rate: 1, Objective: 0.99}},
	}
	rf, _, err := rules.Generate(cfg, rules.Options{})
	if err != nil {
		t.Fatal(err)
	}
	factorRe := regexp.MustCompile(` > ([0-9.]+)\n`)
	var burns []string // "12x (10m and 5m)"
	longs := map[string]bool{}
	for r := range rf.Rules() {
		if r.Alert != rules.AlertFastBurn && r.Alert != rules.AlertSlowBurn {
			continue
		}
		m := factorRe.FindStringSubmatch(r.Expr)
		if m == nil {
			t.Fatalf("no factor in %s", r.Expr)
		}
		burns = append(burns, fmt.Sprintf("%sx (%s and %s)", m[1], r.Labels["long_window"], r.Labels["short_window"]))
		longs[r.Labels["long_window"]] = true
	}
	if len(burns) < 2 {
		t.Fatalf("only %d burn alerts generated", len(burns))
	}
	qs, err := Queries()
	if err != nil {
		t.Fatal(err)
	}
	recordRe := regexp.MustCompile(regexp.QuoteMeta(rules.RecordAcceptance) + `(\w+)\{`)
	read := map[string]bool{}
	descs := map[string]string{}
	for _, q := range qs {
		if q.Dashboard != "overview.json" {
			continue
		}
		switch q.Panel {
		case "Burn rate over the alert windows":
			for _, m := range recordRe.FindAllStringSubmatch(q.Expr, -1) {
				read[m[1]] = true
			}
			fallthrough
		case "Error budget burn rate":
			descs[q.Panel] = q.PanelDescription
		}
	}
	if !maps.Equal(read, longs) {
		t.Errorf("burn panel reads the acceptance records over %v, want the alerts' long windows %v", slices.Sorted(maps.Keys(read)), slices.Sorted(maps.Keys(longs)))
	}
	if len(descs) != 2 {
		t.Fatalf("burn rate panels not found: %v", descs)
	}
	for panel, desc := range descs {
		for _, b := range burns {
			if !strings.Contains(desc, b) {
				t.Errorf("%s: description does not give the alert %s: %q", panel, b, desc)
			}
		}
	}
}

// TestTTFTGapPanelFollowsAlert: the client − server TTFT gap panel, which
// says VLLMProbeClientTTFTAboveServer fires when it is large, takes the
// client side as that alert's record does: a target with a gateway by its
// gateway's requests only (replica=""), else its replicas' together, each
// in its classic and native form.
func TestTTFTGapPanelFollowsAlert(t *testing.T) {
	cfg := &config.Config{
		Targets: []config.Target{{Name: "gw", URL: "http://gw:8000", Discovery: &discovery.Config{DNS: &discovery.DNSConfig{Names: []string{"vllm.example"}, Port: 8000}}}},
		Probes:  []config.Probe{{Name: "p", Rate: 1, Objective: 0.99}},
	}
	rf, _, err := rules.Generate(cfg, rules.Options{})
	if err != nil {
		t.Fatal(err)
	}
	recorded := false
	for r := range rf.Rules() {
		if strings.HasPrefix(r.Record, "target:"+metricname.TTFT+":p50_rate") {
			recorded = true
			if !strings.Contains(r.Expr, `target=~"gw",replica=""`) {
				t.Errorf("the alert's client TTFT record no longer reads the gateway's series alone; update the panel too:\n%s", r.Expr)
			}
		}
	}
	if !recorded {
		t.Fatal("no client TTFT record generated")
	}
	qs, err := Queries()
	if err != nil {
		t.Fatal(err)
	}
	sel := regexp.MustCompile(regexp.QuoteMeta(metricname.TTFT) + `(?:_bucket)?\{([^}]*)\}`)
	var got []string
	for _, q := range qs {
		if q.Dashboard == "latency.json" && q.Panel == "Client - server TTFT gap (p50)" {
			for _, m := range sel.FindAllStringSubmatch(q.Expr, -1) {
				got = append(got, m[1])
			}
		}
	}
	const m = `target=~"$target",probe=~"$probe"`
	want := []string{m + `,replica=""`, m + `,replica=""`, m + `,replica!=""`, m + `,replica!=""`}
	if !slices.Equal(got, want) {
		t.Errorf("gap panel's client selectors %q, want %q (the gateway's series first, else the replicas')", got, want)
	}
}

// TestRatePanelsShowCountsAsCounts: a panel in requests per second that
// also draws a gauge (requests in flight) gives that query a unit of its
// own, so a count of requests is not labelled req/s.
func TestRatePanelsShowCountsAsCounts(t *testing.T) {
	type override struct {
		Matcher struct {
			ID      string `json:"id"`
			Options string `json:"options"`
		} `json:"matcher"`
		Properties []struct {
			ID    string `json:"id"`
			Value any    `json:"value"`
		} `json:"properties"`
	}
	type panel struct {
		Title       string `json:"title"`
		FieldConfig struct {
			Defaults struct {
				Unit string `json:"unit"`
			} `json:"defaults"`
			Overrides []override `json:"overrides"`
		} `json:"fieldConfig"`
		Targets []struct {
			RefID string `json:"refId"`
			Expr  string `json:"expr"`
		} `json:"targets"`
		Panels []panel `json:"panels"`
	}
	checked := 0
	for _, d := range All() {
		var dj struct {
			Panels []panel `json:"panels"`
		}
		if err := json.Unmarshal(d.JSON, &dj); err != nil {
			t.Fatal(err)
		}
		var walk func([]panel)
		walk = func(ps []panel) {
			for _, p := range ps {
				walk(p.Panels)
				if p.FieldConfig.Defaults.Unit != "reqps" {
					continue
				}
				for _, tg := range p.Targets {
					if strings.Contains(tg.Expr, "rate(") {
						continue
					}
					checked++
					unit := ""
					for _, o := range p.FieldConfig.Overrides {
						if o.Matcher.ID == "byFrameRefID" && o.Matcher.Options == tg.RefID {
							for _, pr := range o.Properties {
								if pr.ID == "unit" {
									unit, _ = pr.Value.(string)
								}
							}
						}
					}
					if unit == "" || strings.HasSuffix(unit, "ps") {
						t.Errorf("%s/%s: %s is not a rate but is shown in %q (its override's unit %q)", d.Name, p.Title, tg.RefID, p.FieldConfig.Defaults.Unit, unit)
					}
				}
			}
		}
		walk(dj.Panels)
	}
	if checked == 0 {
		t.Error("no gauge on a req/s panel checked")
	}
}
