package rules_test

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/vllm-prober/vllm-prober/config"
	"github.com/vllm-prober/vllm-prober/discovery"
	"github.com/vllm-prober/vllm-prober/rules"
	"github.com/vllm-prober/vllm-prober/rules/internal/plan"
	"github.com/vllm-prober/vllm-prober/rules/internal/rulestest"
)

// The alert matrix: outages of each kind, at real time scale, against the
// rules Generate makes with the default options for one probe at each
// objective. matrix_e2e_test.go runs every scenario through
// `promtool test rules` and checks the measured times against each
// scenario's want; docs/alerts.md, "Alert matrix", is that table
// (TestMatrixTableInDocs keeps it so). matrix_series_test.go renders the
// series and the measurements.

// matrixObjectives are the objectives every scenario runs at.
var matrixObjectives = []float64{0.99, 0.995, 0.999}

// matrixOutcome is what a request of a scenario step ends as.
type matrixOutcome int

const (
	mAccepted matrixOutcome = iota
	mHTTP5xx
	mShed    // cancelled at max_in_flight
	mLatency // latency_failure: TTFT above the SLO
)

// matrixPhase is a run of time in which a share of the requests ends as
// out, the rest accepted. noise draws each request's failure at random
// (seeded) instead of the exact share per step; count, when set, ends
// exactly that many requests (the phase's first ones) as out instead.
type matrixPhase struct {
	d     time.Duration
	out   matrixOutcome
	share float64
	noise bool
	count int
}

// matrixScenario is one row of the matrix.
type matrixScenario struct {
	name string
	// rate is the probe's requests per second.
	rate float64
	// step is the sample and evaluation interval.
	step time.Duration
	// warm is healthy time before the phases: at least the longest window
	// an alert of the scenario reads, so every window is full.
	warm time.Duration
	// phases follow warm; shares may depend on the objective's budget.
	phases func(budget float64) []matrixPhase
	// bad is how long from the start of the phases the service is broken;
	// recovery (for the time to resolve) starts there.
	bad time.Duration
	// tail is healthy time after the phases.
	tail time.Duration
	// goal says what the scenario must show, for the table.
	goal string
	// alert, when set, is the only alert measured (a regular expression
	// of alert names; else every alert of the severity counts).
	alert string
	// replicas, when set, makes the probe's target discover that many
	// replicas besides its url: each replica and the gateway get the
	// scenario's traffic at rate, drawn with a seed of their own.
	replicas int
	// oneReplica applies the phases to the first replica only; the
	// gateway and the other replicas stay healthy.
	oneReplica bool
	// pagesOnly evaluates only the page alerts and the recording rules
	// they read (see alertRules), for runs of 30 days; the ticket is then
	// not measured.
	pagesOnly bool
	// want is the measured table row: per objective of matrixObjectives,
	// "page ticket resolve pages tickets" (see parseResult), separated
	// by "|".
	want string
}

func steady(d time.Duration, out matrixOutcome, share float64) []matrixPhase {
	return []matrixPhase{{d: d, out: out, share: share}}
}

// matrixShort is the evaluation interval of the outage scenarios (the
// measured times are multiples of it), matrixLong that of the scenarios
// that last days.
const (
	matrixShort = time.Minute
	matrixLong  = 2 * time.Minute
	matrixDay   = 24 * time.Hour
	matrixMonth = 30 * matrixDay
)

// matrixNoise is the sample and evaluation interval of the 30-day noise
// scenarios: the longest that leaves two samples in the shortest window
// (5m) the pages read. The window contents change only at a sample, and
// promtool evaluates at every sample, so every state of every window is
// judged: a coarser interval does not skip a possible page.
const matrixNoise = 2*time.Minute + 30*time.Second

// outage is a scenario of an hour in which a share of the requests ends
// as out, after a day of healthy traffic; tail is the healthy time after.
func outage(name, goal string, rate float64, out matrixOutcome, share float64, tail time.Duration, want string) matrixScenario {
	return matrixScenario{name: name, goal: goal, rate: rate, step: matrixShort, warm: matrixDay, bad: time.Hour, tail: tail, want: want,
		phases: func(float64) []matrixPhase { return steady(time.Hour, out, share) }}
}

// noise is a scenario of 30 days in which requests fail at random at half
// the budget.
func noise(name string, rate float64, want string) matrixScenario {
	return matrixScenario{name: name, goal: "no page in 30d", rate: rate, step: matrixNoise, warm: matrixDay, pagesOnly: true, want: want,
		phases: func(budget float64) []matrixPhase {
			return []matrixPhase{{d: matrixMonth, out: mHTTP5xx, share: budget / 2, noise: true}}
		}}
}

var matrixScenarios = []matrixScenario{
	outage("100% errors", "page ≤ 2m", 1, mHTTP5xx, 1, 30*time.Minute, "2m 30m 10m 1 1 | 1m 23m 10m 1 1 | 1m 17m 10m 1 1"),
	outage("50% errors", "page ≤ 5m", 1, mHTTP5xx, 0.5, 30*time.Minute, "3m 44m 10m 1 1 | 2m 30m 10m 1 1 | 1m 18m 10m 1 1"),
	outage("10% errors", "page ≤ 30m at 99%", 1, mHTTP5xx, 0.1, 30*time.Minute, "25m never 1m 1 0 | 7m never 3m 1 0 | 2m 30m 10m 1 1"),
	outage("shedding: every request at the in-flight cap", "page ≤ 2m", 1, mShed, 1, 30*time.Minute, "2m 10m 10m 1 1 | 1m 10m 10m 1 1 | 1m 10m 10m 1 1"),
	outage("latency only: every TTFT above the SLO", "page ≤ 2m", 1, mLatency, 1, 30*time.Minute, "2m 11m 10m 1 1 | 1m 11m 10m 1 1 | 1m 11m 10m 1 1"),
	{name: "flapping: 2m of errors every 30m for 3h", rate: 1, step: matrixShort, warm: matrixDay, bad: 3*time.Hour - 28*time.Minute, tail: 30 * time.Minute,
		phases: func(float64) []matrixPhase {
			var ps []matrixPhase
			for range 6 {
				ps = append(ps, matrixPhase{d: 2 * time.Minute, out: mHTTP5xx, share: 1}, matrixPhase{d: 28 * time.Minute, out: mHTTP5xx})
			}
			return ps
		}, goal: "resolve ≤ 15m", want: "2m never 5m 6 0 | 1m never 10m 6 0 | 1m never 10m 6 0"},
	{name: "slow leak: failures at twice the budget for 2d", rate: 1, step: matrixLong, warm: matrixDay, bad: 2 * matrixDay, tail: time.Hour,
		phases: func(budget float64) []matrixPhase { return steady(2*matrixDay, mHTTP5xx, 2*budget) }, goal: "ticket ≤ 1d, no page",
		want: "never 12h16m 6m 0 1 | never 12h16m 6m 0 1 | never 12h18m 10m 0 1"},
	noise("healthy, random failures at half the budget, 30d", 1, "never - never 0 - | never - never 0 - | never - never 0 -"),
	noise("low rate 0.05/s, random failures at half the budget, 30d", 0.05, "never - never 0 - | never - never 0 - | never - never 0 -"),
	func() matrixScenario {
		sc := noise("fleet: gateway and 4 replicas at 1/s each, random failures at half the budget, 30d: "+rules.AlertReplicaFailing+" and "+rules.AlertGatewayFailing,
			1, "never - never 0 - | never - never 0 - | never - never 0 -")
		sc.alert, sc.replicas = rules.AlertReplicaFailing+"|"+rules.AlertGatewayFailing, 4
		return sc
	}(),
	func() matrixScenario {
		sc := outage("fleet: 1 of 4 replicas at 1/s fails every request: "+rules.AlertReplicaFailing+" alone", "page ≤ 2m", 1, mHTTP5xx, 1, 30*time.Minute,
			"2m - 10m 1 - | 1m - 10m 1 - | 1m - 10m 1 -")
		sc.alert, sc.replicas, sc.oneReplica, sc.pagesOnly = rules.AlertReplicaFailing, 4, true, true
		return sc
	}(),
	outage("low rate 0.05/s, 100% errors", "page, later than at 1/s", 0.05, mHTTP5xx, 1, time.Hour, "3m 30m 10m 1 1 | 2m 23m 20m 1 1 | 1m never 45m 1 0"),
	func() matrixScenario {
		sc := outage("low rate 0.05/s, 100% errors: "+rules.AlertTargetDown+" alone", "page ≤ 10m", 0.05, mHTTP5xx, 1, time.Hour, "5m never 1m 1 0 | 5m never 1m 1 0 | 5m never 1m 1 0")
		sc.alert = rules.AlertTargetDown
		return sc
	}(),
	{name: "one request per 10m, one of them fails", rate: 1.0 / 600, step: matrixShort, warm: matrixDay, tail: 6 * time.Hour,
		phases: func(float64) []matrixPhase { return []matrixPhase{{d: time.Hour, out: mHTTP5xx, count: 1}} }, goal: "no page",
		want: "never never never 0 0 | never never never 0 0 | never never never 0 0"},
}

// matrixSLO is the probe's TTFT objective; latency scenarios end every
// request above it.
const matrixSLO = time.Second

func matrixConfig(rate, objective float64) *config.Config {
	return rulestest.OneProbe(rulestest.Probe("chat", rate, objective, config.SLO{TTFT: rulestest.Sec(matrixSLO)}))
}

// matrixScenarioConfig is matrixConfig for sc: with replicas, the target
// has a url and discovery.
func matrixScenarioConfig(sc matrixScenario, objective float64) *config.Config {
	cfg := matrixConfig(sc.rate, objective)
	if sc.replicas > 0 {
		cfg.Targets[0].URL = "http://gateway:8000"
		cfg.Targets[0].Discovery = &discovery.Config{FileSD: &discovery.FileSDConfig{Files: []string{"replicas.json"}}}
	}
	return cfg
}

// matrixTable renders the scenarios' want as the Markdown table of
// docs/alerts.md.
func matrixTable() (string, error) {
	var b strings.Builder
	b.WriteString("| scenario | goal |")
	for _, o := range matrixObjectives {
		fmt.Fprintf(&b, " %s%%: page · ticket · resolve · pages |", plan.FmtF(o*100))
	}
	b.WriteString("\n|---|---|")
	for range matrixObjectives {
		b.WriteString("---|")
	}
	b.WriteString("\n")
	for _, sc := range matrixScenarios {
		rs, err := parseResults(sc.want)
		if err != nil {
			return "", fmt.Errorf("%s: %w", sc.name, err)
		}
		fmt.Fprintf(&b, "| %s | %s |", sc.name, sc.goal)
		for _, r := range rs {
			fmt.Fprintf(&b, " %s · %s · %s · %d |", fmtCell(r.page), fmtCell(r.ticket), fmtCell(r.resolve), r.pages)
		}
		b.WriteString("\n")
	}
	return b.String(), nil
}

const (
	matrixBegin = "<!-- alert matrix: generated by TestMatrixTableInDocs -->\n"
	matrixEnd   = "<!-- end of alert matrix -->\n"
)

// TestMatrixTableInDocs: docs/alerts.md holds the measured table
// (regenerate with go test ./rules -run TestMatrixTableInDocs -update).
func TestMatrixTableInDocs(t *testing.T) {
	const path = "../docs/alerts.md"
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	i, j := strings.Index(doc, matrixBegin), strings.Index(doc, matrixEnd)
	if i < 0 || j < i {
		t.Fatalf("%s lacks the alert matrix markers", path)
	}
	table, err := matrixTable()
	if err != nil {
		t.Fatal(err)
	}
	want := doc[:i+len(matrixBegin)] + table + doc[j:]
	if want == doc {
		return
	}
	if *update {
		if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("the alert matrix in %s differs from the scenarios' want; regenerate with: go test ./rules -run TestMatrixTableInDocs -update", path)
}

// TestMatrixSeries: the scenario counters render as promtool values with
// sparse steps left out, and a scenario's group measures all five cells.
func TestMatrixSeries(t *testing.T) {
	ms := &matrixSeries{values: map[string][]float64{}}
	for s, inc := range []float64{0, 2, 2, 2, 2, 5, 5, 0} {
		ms.add("c", s, inc)
	}
	if got, want := ms.render("c", 7, func(int) bool { return true }), "0+2x4 13+5x1 18+0x0"; got != want {
		t.Errorf("dense render = %q, want %q", got, want)
	}
	if got, want := ms.render("c", 7, func(i int) bool { return i == 0 || i >= 4 }), "0+2x0 _x3 8+5x2 18+0x0"; got != want {
		t.Errorf("sparse render = %q, want %q", got, want)
	}
	sc := matrixScenarios[0]
	rs, err := parseResults(sc.want)
	if err != nil {
		t.Fatal(err)
	}
	g, steps := matrixGroup(sc, 0.99, rs[0])
	if want := int((sc.warm + time.Hour + sc.tail) / sc.step); steps != want {
		t.Errorf("steps = %d, want %d", steps, want)
	}
	if len(g.ExprTests) != 5 || !strings.Contains(g.InputSeries[0].Values, fmt.Sprintf("+60x%d", int(matrixDense/sc.step)+int((time.Hour+sc.tail)/sc.step))) {
		t.Errorf("group: %d expr tests, offered %q", len(g.ExprTests), g.InputSeries[0].Values[len(g.InputSeries[0].Values)-40:])
	}
}

// TestMatrixProbeKeepsStandardWindows: at 1/s the matrix's probe has the
// documented windows at every objective, so the table measures them.
func TestMatrixProbeKeepsStandardWindows(t *testing.T) {
	for _, o := range matrixObjectives {
		rf, warnings, err := rules.Generate(matrixConfig(1, o), rules.Options{})
		if err != nil {
			t.Fatal(err)
		}
		page, ticket := windowsOf(rulestest.Alerts(rf, rules.AlertFastBurn)), windowsOf(rulestest.Alerts(rf, rules.AlertSlowBurn))
		if strings.Join(page, ",") != "10m/5m,30m/5m,6h/10m" || strings.Join(ticket, ",") != "1d/10m" || len(warnings) != 0 {
			t.Errorf("objective %g: page %v, ticket %v, warnings %v", o, page, ticket, warnings)
		}
		if r := rulestest.Alerts(rf, rules.AlertLatencyHigh); len(r) != 1 || !strings.Contains(r[0].Expr, "> "+plan.FmtF(matrixSLO.Seconds())) {
			t.Errorf("objective %g: latency alerts %v", o, r)
		}
	}
}

// TestMatrixRules: a scenario evaluates every alert (or every page) of the
// generated file and exactly the recording rules they read.
func TestMatrixRules(t *testing.T) {
	rf, _, err := rules.Generate(matrixConfig(1, 0.99), rules.Options{})
	if err != nil {
		t.Fatal(err)
	}
	names := func(rf *rules.RuleFile, alerts bool) []string {
		var out []string
		for r := range rf.Rules() {
			if alerts && r.Alert != "" {
				out = append(out, r.Alert+"/"+r.Labels["severity"])
			} else if !alerts && r.Record != "" {
				out = append(out, r.Record)
			}
		}
		return out
	}
	cases := []struct {
		name      string
		sc        matrixScenario
		alerts    []string
		recording string
	}{
		{"every alert", matrixScenario{}, names(rf, true), "" +
			"target_probe:vllm_probe_requests_offered:rate5m target_probe:vllm_probe_acceptance:ratio_rate5m " +
			"target_probe:vllm_probe_requests_offered:rate10m target_probe:vllm_probe_acceptance:ratio_rate10m " +
			"target_probe:vllm_probe_requests_offered:rate30m target_probe:vllm_probe_acceptance:ratio_rate30m " +
			"target_probe:vllm_probe_requests_offered:rate6h target_probe:vllm_probe_acceptance:ratio_rate6h " +
			"target_probe:vllm_probe_requests_offered:rate1d target_probe:vllm_probe_acceptance:ratio_rate1d " +
			"target:vllm_probe_time_to_first_token_seconds:p50_rate10m target:vllm_time_to_first_token_seconds:p50_rate10m"},
		{"pages only", matrixScenario{pagesOnly: true},
			[]string{rules.AlertFastBurn + "/page", rules.AlertFastBurn + "/page", rules.AlertFastBurn + "/page", rules.AlertTargetDown + "/page"}, "" +
				"target_probe:vllm_probe_requests_offered:rate5m target_probe:vllm_probe_acceptance:ratio_rate5m " +
				"target_probe:vllm_probe_requests_offered:rate10m target_probe:vllm_probe_acceptance:ratio_rate10m " +
				"target_probe:vllm_probe_requests_offered:rate30m target_probe:vllm_probe_acceptance:ratio_rate30m " +
				"target_probe:vllm_probe_requests_offered:rate6h target_probe:vllm_probe_acceptance:ratio_rate6h"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := matrixRules(tc.sc, rf)
			if a := names(got, true); strings.Join(a, ",") != strings.Join(tc.alerts, ",") {
				t.Errorf("alerts %v, want %v", a, tc.alerts)
			}
			if r := strings.Join(names(got, false), " "); r != tc.recording {
				t.Errorf("recording rules\n%s\nwant\n%s", r, tc.recording)
			}
		})
	}
}

// TestMatrixParseResults: a scenario's want reads as one result per
// objective, and a malformed one is an error naming the cell.
func TestMatrixParseResults(t *testing.T) {
	rs, err := parseResults("2m 30m 10m 1 1 | never - never 0 - | 12h16m never 1m 6 0")
	if err != nil {
		t.Fatal(err)
	}
	want := []matrixResult{
		{2 * time.Minute, 30 * time.Minute, 10 * time.Minute, 1, 1},
		{never, notRun, never, 0, -1},
		{12*time.Hour + 16*time.Minute, never, time.Minute, 6, 0},
	}
	if fmt.Sprint(rs) != fmt.Sprint(want) {
		t.Errorf("got %v, want %v", rs, want)
	}
	for _, bad := range []string{"2m 30m 10m 1 | 1m 1m 1m 1 1 | 1m 1m 1m 1 1", "2m 30m 10m 1 1", "2x 30m 10m 1 1 | 1m 1m 1m 1 1 | 1m 1m 1m 1 1"} {
		if _, err := parseResults(bad); err == nil {
			t.Errorf("parseResults(%q): no error", bad)
		}
	}
}

// TestMatrixFleetScenarios: a fleet row evaluates the fleet pages on a
// gateway and its replicas, each series set drawn with its own seed, and
// with oneReplica only the first replica fails.
func TestMatrixFleetScenarios(t *testing.T) {
	n := 0
	for _, sc := range matrixScenarios {
		if sc.replicas == 0 {
			continue
		}
		n++
		rf, _, err := rules.Generate(matrixScenarioConfig(sc, 0.99), rules.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if rs := matrixRules(sc, rf); len(rulestest.Alerts(rs, rules.AlertReplicaFailing)) != 3 || len(rulestest.Alerts(rs, rules.AlertGatewayFailing)) != 3 {
			t.Errorf("%s: %d replica and %d gateway pages evaluated, want 3 each", sc.name, len(rulestest.Alerts(rs, rules.AlertReplicaFailing)), len(rulestest.Alerts(rs, rules.AlertGatewayFailing)))
		}
		offered := map[string]string{}
		for i := range sc.replicas + 1 {
			ms, _ := matrixTraffic(sc, 0.99, i)
			offered[fmt.Sprint(ms.values["server_failure"])] += fmt.Sprint(i)
		}
		switch {
		case sc.oneReplica && len(offered) != 2:
			t.Errorf("%s: %d distinct failure patterns, want the failing replica's and the healthy one", sc.name, len(offered))
		case !sc.oneReplica && len(offered) != sc.replicas+1:
			t.Errorf("%s: %d distinct failure patterns over %d series sets, want one each", sc.name, len(offered), sc.replicas+1)
		}
		g, _ := matrixGroup(sc, 0.99, matrixResult{})
		perSet := (len(g.InputSeries) - 2) / (sc.replicas + 1) // less up and the reload gauge
		if got := strings.Count(fmt.Sprint(g.InputSeries), `replica="`); got != sc.replicas*perSet {
			t.Errorf("%s: %d series with a replica label, want %d", sc.name, got, sc.replicas*perSet)
		}
	}
	if n != 2 {
		t.Errorf("%d fleet rows, want 2", n)
	}
}
