package rules

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/vllm-prober/vllm-prober/collector/metricname"
	"github.com/vllm-prober/vllm-prober/config"
)

// The alert matrix: outages of each kind, at real time scale, against the
// rules Generate makes with the default options for one probe at each
// objective. matrix_e2e_test.go runs every scenario through
// `promtool test rules` and checks the measured times against
// matrixWant; docs/alerts.md, "Alert matrix", is that table
// (TestMatrixTableInDocs keeps it so).

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
// (seeded) instead of the exact share per step.
type matrixPhase struct {
	d     time.Duration
	out   matrixOutcome
	share float64
	noise bool
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
)

var matrixScenarios = []matrixScenario{
	{name: "100% errors", rate: 1, step: matrixShort, warm: matrixDay, bad: time.Hour, tail: 30 * time.Minute,
		phases: func(float64) []matrixPhase { return steady(time.Hour, mHTTP5xx, 1) }, goal: "page ≤ 2m"},
	{name: "50% errors", rate: 1, step: matrixShort, warm: matrixDay, bad: time.Hour, tail: 30 * time.Minute,
		phases: func(float64) []matrixPhase { return steady(time.Hour, mHTTP5xx, 0.5) }, goal: "page ≤ 5m"},
	{name: "10% errors", rate: 1, step: matrixShort, warm: matrixDay, bad: time.Hour, tail: 30 * time.Minute,
		phases: func(float64) []matrixPhase { return steady(time.Hour, mHTTP5xx, 0.1) }, goal: "page ≤ 30m at 99%"},
	{name: "shedding: every request at the in-flight cap", rate: 1, step: matrixShort, warm: matrixDay, bad: time.Hour, tail: 30 * time.Minute,
		phases: func(float64) []matrixPhase { return steady(time.Hour, mShed, 1) }, goal: "page ≤ 2m"},
	{name: "latency only: every TTFT above the SLO", rate: 1, step: matrixShort, warm: matrixDay, bad: time.Hour, tail: 30 * time.Minute,
		phases: func(float64) []matrixPhase { return steady(time.Hour, mLatency, 1) }, goal: "page ≤ 2m"},
	{name: "flapping: 2m of errors every 30m for 3h", rate: 1, step: matrixShort, warm: matrixDay, bad: 3*time.Hour - 28*time.Minute, tail: 30 * time.Minute,
		phases: func(float64) []matrixPhase {
			var ps []matrixPhase
			for range 6 {
				ps = append(ps, matrixPhase{d: 2 * time.Minute, out: mHTTP5xx, share: 1}, matrixPhase{d: 28 * time.Minute, out: mHTTP5xx})
			}
			return ps
		}, goal: "resolve ≤ 15m"},
	{name: "slow leak: failures at twice the budget for 2d", rate: 1, step: matrixLong, warm: matrixDay, bad: 2 * matrixDay, tail: time.Hour,
		phases: func(budget float64) []matrixPhase { return steady(2*matrixDay, mHTTP5xx, 2*budget) }, goal: "ticket ≤ 1d, no page"},
	{name: "healthy, random failures at half the budget, 3d", rate: 1, step: matrixLong, warm: matrixDay,
		phases: func(budget float64) []matrixPhase {
			return []matrixPhase{{d: 3 * matrixDay, out: mHTTP5xx, share: budget / 2, noise: true}}
		}, goal: "no page"},
	{name: "low rate 0.05/s, random failures at half the budget, 3d", rate: 0.05, step: matrixLong, warm: matrixDay,
		phases: func(budget float64) []matrixPhase {
			return []matrixPhase{{d: 3 * matrixDay, out: mHTTP5xx, share: budget / 2, noise: true}}
		}, goal: "no page"},
	{name: "low rate 0.05/s, 100% errors", rate: 0.05, step: matrixShort, warm: matrixDay, bad: time.Hour, tail: time.Hour,
		phases: func(float64) []matrixPhase { return steady(time.Hour, mHTTP5xx, 1) }, goal: "page, later than at 1/s"},
}

// matrixSLO is the probe's TTFT objective; latency scenarios end every
// request above it.
const matrixSLO = time.Second

func matrixConfig(rate, objective float64) *config.Config {
	return oneProbe(testProbe("chat", rate, objective, config.SLO{TTFT: sec(matrixSLO)}))
}

// matrixSeries renders the scenario's counters in promtool notation, one
// value per step.
type matrixSeries struct {
	names  []string
	values map[string][]float64
}

func (ms *matrixSeries) add(name string, step int, v float64) {
	if _, ok := ms.values[name]; !ok {
		ms.names = append(ms.names, name)
		ms.values[name] = nil
	}
	for len(ms.values[name]) <= step {
		ms.values[name] = append(ms.values[name], 0)
	}
	ms.values[name][step] += v
}

// render writes a counter as its running sum from 0 at step 0, only at
// the steps present says (promtool's _ elsewhere), collapsing runs of
// equal increments into promtool's a+bxn.
func (ms *matrixSeries) render(name string, steps int, present func(int) bool) string {
	incs := ms.values[name]
	inc := func(i int) float64 {
		if i < len(incs) {
			return incs[i]
		}
		return 0
	}
	var parts []string
	v := 0.0
	for i := 0; i <= steps; {
		if !present(i) {
			j := i
			for j+1 <= steps && !present(j+1) {
				j++
				v += inc(j)
			}
			parts = append(parts, fmt.Sprintf("_x%d", j-i+1))
			i = j + 1
			v += inc(i)
			continue
		}
		c := inc(i + 1)
		j := i
		for j+1 <= steps && present(j+1) && inc(j+1) == c {
			j++
		}
		parts = append(parts, fmt.Sprintf("%s+%sx%d", fmtF(v), fmtF(c), j-i))
		v += c * float64(j-i)
		i = j + 1
		v += inc(i)
	}
	return strings.Join(parts, " ")
}

// matrixSparse is the sample interval of the warm-up, up to matrixDense
// before the phases: healthy counters grow linearly, so every window's
// ratio is exact from sparse samples, and promtool reads far fewer.
const (
	matrixSparse = 10 * time.Minute
	matrixDense  = time.Hour
)

// matrixGroup builds the promtool test group of a scenario at objective:
// the probe's traffic and the measurement expressions, whose expected
// values are want (unknown values render as "" and are left to promtool
// to report).
func matrixGroup(sc matrixScenario, objective float64, want matrixResult) (TestGroup, int) {
	budget := roundF(1 - objective)
	step := sc.step
	per := sc.rate * step.Seconds()
	ms := &matrixSeries{values: map[string][]float64{}}
	rng := rand.New(rand.NewPCG(uint64(objective*1e6), uint64(len(sc.name))))
	phases := append([]matrixPhase{{d: sc.warm, out: mAccepted}}, sc.phases(budget)...)
	phases = append(phases, matrixPhase{d: sc.tail, out: mAccepted})
	s := 1
	for _, ph := range phases {
		// Whole requests only: a fractional counter's running sum, rounded,
		// can step back by 1e-9, which Prometheus reads as a counter reset.
		cum := 0.0
		for range int(ph.d / step) {
			bad := math.Round(cum+per*ph.share) - math.Round(cum)
			cum += per * ph.share
			if ph.noise {
				bad = 0
				for range int(math.Round(per)) {
					if rng.Float64() < ph.share {
						bad++
					}
				}
				if frac := per - math.Floor(per); frac > 0 && rng.Float64() < frac*ph.share {
					bad++
				}
			}
			if ph.out == mAccepted {
				bad = 0
			}
			ms.add("offered", s, per)
			ms.add("accepted", s, per-bad)
			switch ph.out {
			case mHTTP5xx:
				ms.add("server_failure", s, bad)
				ms.add("http_5xx", s, bad)
			case mShed:
				ms.add("cancelled", s, bad)
				ms.add("in_flight_cap", s, bad)
			case mLatency:
				ms.add("latency_failure", s, bad)
			}
			// TTFT histogram: accepted requests at 0.5s, latency failures at 2s.
			ms.add("le0.5", s, per-bad*b2f(ph.out == mLatency))
			ms.add("le1", s, per-bad*b2f(ph.out == mLatency))
			ms.add("le2", s, per)
			s++
		}
	}
	steps := s - 1
	denseFrom := int((sc.warm - matrixDense) / step)
	sparseEvery := int(matrixSparse / step)
	present := func(i int) bool { return i >= denseFrom || i%sparseEvery == 0 }
	labels := `job="vllm-prober",instance="prober:9478",target="llama",probe="chat"`
	var ss []InputSeries
	in := func(series, key string) {
		ss = append(ss, InputSeries{Series: series, Values: ms.render(key, steps, present)})
	}
	in(metricname.RequestsOffered+"{"+labels+"}", "offered")
	for _, d := range []string{"accepted", "server_failure", "cancelled", "latency_failure"} {
		in(fmt.Sprintf("%s{%s,disposition=%q}", metricname.Requests, labels, d), d)
	}
	// Like the collector, every reason the rules read is exported, at 0
	// when unused (a missing one would leave the sums empty).
	for _, r := range append(append([]string{reasonInFlightCap}, abandonedReasons...), completedFailureReasons...) {
		in(fmt.Sprintf("%s{%s,reason=%q}", metricname.Failures, labels, r), r)
	}
	for _, le := range []string{"0.5", "1", "2"} {
		in(fmt.Sprintf("vllm_probe_time_to_first_token_seconds_bucket{%s,le=%q}", labels, le), "le"+le)
	}
	in(fmt.Sprintf("vllm_probe_time_to_first_token_seconds_bucket{%s,le=\"+Inf\"}", labels), "le2")
	ss = append(ss,
		InputSeries{Series: `up{job="vllm-prober",instance="prober:9478"}`, Values: fmt.Sprintf("1+0x%d", steps)},
		InputSeries{Series: `vllm_prober_config_last_reload_successful{job="vllm-prober",instance="prober:9478"}`, Values: fmt.Sprintf("1+0x%d", steps)},
	)
	end := time.Duration(steps) * step
	start := sc.warm
	g := TestGroup{Name: fmt.Sprintf("%s at %s%%", sc.name, fmtF(objective*100)), Interval: fmtDur(step), InputSeries: ss}
	g.ExprTests = matrixExprs(end, step, start, start+sc.bad, want)
	return g, steps
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// matrixResult is one cell of the table: times from the start of the
// outage (page, ticket) or of the recovery (resolve), and how many times
// a page and a ticket started firing. A negative time means never.
type matrixResult struct {
	page, ticket, resolve time.Duration
	pages, tickets        int
}

const never = time.Duration(-1)

func firing(sev string) string {
	return fmt.Sprintf(`ALERTS{alertstate="firing",severity=%q}`, sev)
}

// matrixExprs measure the result at the end of the run: the first and
// last firing sample of the ALERTS series promtool records, and the
// number of steps at which a page or ticket started firing.
func matrixExprs(end, step, start, recovery time.Duration, want matrixResult) []ExprTest {
	rng := fmt.Sprintf("[%s:%s]", fmtDur(end), fmtDur(step))
	at := fmtDur(end)
	first := func(sev string) string {
		return fmt.Sprintf("min(min_over_time(timestamp(%s)%s)) - %s", firing(sev), rng, fmtF(start.Seconds()))
	}
	starts := func(sev string) string {
		return fmt.Sprintf("sum(count_over_time((max(%[1]s) unless max(%[1]s offset %[2]s))%[3]s))", firing(sev), fmtDur(step), rng)
	}
	resolve := fmt.Sprintf(`max(max_over_time(timestamp(ALERTS{alertstate="firing"})%s)) + %s - %s`, rng, fmtF(step.Seconds()), fmtF(recovery.Seconds()))
	sample := func(d time.Duration) []ExpSample {
		if d < 0 {
			return []ExpSample{}
		}
		return []ExpSample{{Labels: "{}", Value: d.Seconds()}}
	}
	count := func(n int) []ExpSample {
		if n == 0 {
			return []ExpSample{}
		}
		return []ExpSample{{Labels: "{}", Value: float64(n)}}
	}
	return []ExprTest{
		{Expr: first(SeverityPage), EvalTime: at, ExpSamples: sample(want.page)},
		{Expr: first(SeverityTicket), EvalTime: at, ExpSamples: sample(want.ticket)},
		{Expr: resolve, EvalTime: at, ExpSamples: sample(want.resolve)},
		{Expr: starts(SeverityPage), EvalTime: at, ExpSamples: count(want.pages)},
		{Expr: starts(SeverityTicket), EvalTime: at, ExpSamples: count(want.tickets)},
	}
}

func matrixKey(name string, objective float64) string {
	return fmt.Sprintf("%s@%s", name, fmtF(objective))
}

// fmtCell formats a measured time for the table.
func fmtCell(d time.Duration) string {
	if d < 0 {
		return "never"
	}
	return fmtDur(d)
}

// matrixWant is the measured table: what promtool measures for each
// scenario and objective (TestAlertMatrix checks it).
var matrixWant = map[string]matrixResult{
	matrixKey("100% errors", 0.99):                                              {2 * time.Minute, 30 * time.Minute, 10 * time.Minute, 1, 1},
	matrixKey("100% errors", 0.995):                                             {1 * time.Minute, 23 * time.Minute, 10 * time.Minute, 1, 1},
	matrixKey("100% errors", 0.999):                                             {1 * time.Minute, 17 * time.Minute, 10 * time.Minute, 1, 1},
	matrixKey("50% errors", 0.99):                                               {3 * time.Minute, 44 * time.Minute, 10 * time.Minute, 1, 1},
	matrixKey("50% errors", 0.995):                                              {2 * time.Minute, 30 * time.Minute, 10 * time.Minute, 1, 1},
	matrixKey("50% errors", 0.999):                                              {1 * time.Minute, 18 * time.Minute, 10 * time.Minute, 1, 1},
	matrixKey("10% errors", 0.99):                                               {25 * time.Minute, never, 1 * time.Minute, 1, 0},
	matrixKey("10% errors", 0.995):                                              {7 * time.Minute, never, 3 * time.Minute, 1, 0},
	matrixKey("10% errors", 0.999):                                              {2 * time.Minute, 30 * time.Minute, 10 * time.Minute, 1, 1},
	matrixKey("shedding: every request at the in-flight cap", 0.99):             {2 * time.Minute, 10 * time.Minute, 10 * time.Minute, 1, 1},
	matrixKey("shedding: every request at the in-flight cap", 0.995):            {1 * time.Minute, 10 * time.Minute, 10 * time.Minute, 1, 1},
	matrixKey("shedding: every request at the in-flight cap", 0.999):            {1 * time.Minute, 10 * time.Minute, 10 * time.Minute, 1, 1},
	matrixKey("latency only: every TTFT above the SLO", 0.99):                   {2 * time.Minute, 11 * time.Minute, 30 * time.Minute, 1, 1},
	matrixKey("latency only: every TTFT above the SLO", 0.995):                  {1 * time.Minute, 11 * time.Minute, 30 * time.Minute, 1, 1},
	matrixKey("latency only: every TTFT above the SLO", 0.999):                  {1 * time.Minute, 11 * time.Minute, 30 * time.Minute, 1, 1},
	matrixKey("flapping: 2m of errors every 30m for 3h", 0.99):                  {2 * time.Minute, never, 5 * time.Minute, 6, 0},
	matrixKey("flapping: 2m of errors every 30m for 3h", 0.995):                 {1 * time.Minute, never, 10 * time.Minute, 6, 0},
	matrixKey("flapping: 2m of errors every 30m for 3h", 0.999):                 {1 * time.Minute, never, 10 * time.Minute, 6, 0},
	matrixKey("slow leak: failures at twice the budget for 2d", 0.99):           {never, 12*time.Hour + 16*time.Minute, 6 * time.Minute, 0, 1},
	matrixKey("slow leak: failures at twice the budget for 2d", 0.995):          {never, 12*time.Hour + 16*time.Minute, 6 * time.Minute, 0, 1},
	matrixKey("slow leak: failures at twice the budget for 2d", 0.999):          {never, 12*time.Hour + 18*time.Minute, 10 * time.Minute, 0, 1},
	matrixKey("healthy, random failures at half the budget, 3d", 0.99):          {never, never, never, 0, 0},
	matrixKey("healthy, random failures at half the budget, 3d", 0.995):         {never, never, never, 0, 0},
	matrixKey("healthy, random failures at half the budget, 3d", 0.999):         {never, never, never, 0, 0},
	matrixKey("low rate 0.05/s, random failures at half the budget, 3d", 0.99):  {never, never, never, 0, 0},
	matrixKey("low rate 0.05/s, random failures at half the budget, 3d", 0.995): {never, never, never, 0, 0},
	matrixKey("low rate 0.05/s, random failures at half the budget, 3d", 0.999): {never, never, never, 0, 0},
	matrixKey("low rate 0.05/s, 100% errors", 0.99):                             {3 * time.Minute, 30 * time.Minute, 10 * time.Minute, 1, 1},
	matrixKey("low rate 0.05/s, 100% errors", 0.995):                            {2 * time.Minute, 23 * time.Minute, 20 * time.Minute, 1, 1},
	matrixKey("low rate 0.05/s, 100% errors", 0.999):                            {1 * time.Minute, never, 45 * time.Minute, 1, 0},
}

// matrixTable renders matrixWant as the Markdown table of docs/alerts.md.
func matrixTable() string {
	var b strings.Builder
	b.WriteString("| scenario | goal |")
	for _, o := range matrixObjectives {
		fmt.Fprintf(&b, " %s%%: page · ticket · resolve · pages |", fmtF(o*100))
	}
	b.WriteString("\n|---|---|")
	for range matrixObjectives {
		b.WriteString("---|")
	}
	b.WriteString("\n")
	for _, sc := range matrixScenarios {
		fmt.Fprintf(&b, "| %s | %s |", sc.name, sc.goal)
		for _, o := range matrixObjectives {
			r := matrixWant[matrixKey(sc.name, o)]
			fmt.Fprintf(&b, " %s · %s · %s · %d |", fmtCell(r.page), fmtCell(r.ticket), fmtCell(r.resolve), r.pages)
		}
		b.WriteString("\n")
	}
	return b.String()
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
	want := doc[:i+len(matrixBegin)] + matrixTable() + doc[j:]
	if want == doc {
		return
	}
	if *update {
		if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("the alert matrix in %s differs from matrixWant; regenerate with: go test ./rules -run TestMatrixTableInDocs -update", path)
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
	g, steps := matrixGroup(sc, 0.99, matrixWant[matrixKey(sc.name, 0.99)])
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
		rf, warnings, err := Generate(matrixConfig(1, o), Options{})
		if err != nil {
			t.Fatal(err)
		}
		page, ticket := windowsOf(alerts(rf, AlertFastBurn)), windowsOf(alerts(rf, AlertSlowBurn))
		if strings.Join(page, ",") != "10m/5m,30m/5m,6h/10m" || strings.Join(ticket, ",") != "1d/10m" || len(warnings) != 0 {
			t.Errorf("objective %g: page %v, ticket %v, warnings %v", o, page, ticket, warnings)
		}
		if r := alerts(rf, AlertLatencyHigh); len(r) != 1 || !strings.Contains(r[0].Expr, "> "+fmtF(matrixSLO.Seconds())) {
			t.Errorf("objective %g: latency alerts %v", o, r)
		}
	}
}
