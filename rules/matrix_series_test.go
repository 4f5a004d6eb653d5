package rules_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/common/model"

	"github.com/vllm-prober/vllm-prober/collector/metricname"
	"github.com/vllm-prober/vllm-prober/rules"
	"github.com/vllm-prober/vllm-prober/rules/internal/plan"
	"github.com/vllm-prober/vllm-prober/rules/internal/rulestest"
	"github.com/vllm-prober/vllm-prober/rules/promtest"
)

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
		parts = append(parts, fmt.Sprintf("%s+%sx%d", plan.FmtF(v), plan.FmtF(c), j-i))
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

// matrixTraffic is the scenario's counters at objective for its series
// set i (0 the pair's own, i > 0 replica i), one increment per step:
// whole requests only, since a fractional counter's running
// sum, rounded, can step back by 1e-9, which Prometheus reads as a
// counter reset. A rate below one request per step sends a request at
// the steps where the running count passes a whole number.
func matrixTraffic(sc matrixScenario, objective float64, i int) (*matrixSeries, int) {
	budget := plan.RoundF(1 - objective)
	per := sc.rate * sc.step.Seconds()
	ms := &matrixSeries{values: map[string][]float64{}}
	rng := rand.New(rand.NewPCG(uint64(objective*1e6), uint64(len(sc.name))+uint64(i)<<32))
	phases := append([]matrixPhase{{d: sc.warm, out: mAccepted}}, sc.phases(budget)...)
	phases = append(phases, matrixPhase{d: sc.tail, out: mAccepted})
	if sc.oneReplica && i != 1 {
		for j := range phases {
			phases[j].out = mAccepted
		}
	}
	s, sent := 1, 0.0
	for _, ph := range phases {
		cum, left := 0.0, ph.count
		for range int(ph.d / sc.step) {
			n := math.Round(sent+per) - math.Round(sent)
			sent += per
			bad := math.Round(cum+n*ph.share) - math.Round(cum)
			cum += n * ph.share
			switch {
			case ph.out == mAccepted:
				bad = 0
			case ph.count > 0:
				bad = min(n, float64(left))
				left -= int(bad)
			case ph.noise:
				bad = 0
				for range int(n) {
					if rng.Float64() < ph.share {
						bad++
					}
				}
			}
			ms.step(s, n, bad, ph.out)
			s++
		}
	}
	return ms, s - 1
}

// step adds n requests at step s, bad of them ending as out.
func (ms *matrixSeries) step(s int, n, bad float64, out matrixOutcome) {
	ms.add("offered", s, n)
	ms.add("accepted", s, n-bad)
	switch out {
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
	slow := 0.0
	if out == mLatency {
		slow = bad
	}
	ms.add("le0.5", s, n-slow)
	ms.add("le1", s, n-slow)
	ms.add("le2", s, n)
}

// matrixGroup builds the promtool test group of a scenario at objective:
// the probe's traffic and the measurement expressions, whose expected
// values are want.
func matrixGroup(sc matrixScenario, objective float64, want matrixResult) (promtest.Group, int) {
	var ss []promtest.InputSeries
	var steps int
	for i := range sc.replicas + 1 {
		replica := ""
		if i > 0 {
			replica = rulestest.Replicas[i-1]
		}
		var set []promtest.InputSeries
		set, steps = matrixSeriesSet(sc, objective, i, replica)
		ss = append(ss, set...)
	}
	ss = append(ss,
		promtest.InputSeries{Series: `up{job="vllm-prober",instance="prober:9478"}`, Values: fmt.Sprintf("1+0x%d", steps)},
		promtest.InputSeries{Series: metricname.ConfigLastReloadSuccessful + `{job="vllm-prober",instance="prober:9478"}`, Values: fmt.Sprintf("1+0x%d", steps)},
	)
	end := time.Duration(steps) * sc.step
	g := promtest.Group{Name: fmt.Sprintf("%s at %s%%", sc.name, plan.FmtF(objective*100)), Interval: plan.FmtDur(sc.step), InputSeries: ss}
	g.ExprTests = matrixExprs(sc, end, want)
	return g, steps
}

// matrixSeriesSet renders series set i of the scenario (see
// matrixTraffic), labelled with replica when it is not "".
func matrixSeriesSet(sc matrixScenario, objective float64, i int, replica string) ([]promtest.InputSeries, int) {
	ms, steps := matrixTraffic(sc, objective, i)
	denseFrom := int((sc.warm - matrixDense) / sc.step)
	sparseEvery := int(matrixSparse / sc.step)
	present := func(i int) bool { return i >= denseFrom || i%sparseEvery == 0 }
	labels := `job="vllm-prober",instance="prober:9478",target="llama",probe="chat"`
	if replica != "" {
		labels += fmt.Sprintf(",replica=%q", replica)
	}
	var ss []promtest.InputSeries
	in := func(series, key string) {
		ss = append(ss, promtest.InputSeries{Series: series, Values: ms.render(key, steps, present)})
	}
	in(metricname.RequestsOffered+"{"+labels+"}", "offered")
	for _, d := range []string{"accepted", "server_failure", "cancelled", "latency_failure"} {
		in(fmt.Sprintf("%s{%s,disposition=%q}", metricname.Requests, labels, d), d)
	}
	// Like the collector, every reason the rules read is exported, at 0
	// when unused (a missing one would leave the sums empty).
	for _, r := range append(append([]string{plan.ReasonInFlightCap}, plan.AbandonedReasons...), plan.CompletedFailureReasons...) {
		in(fmt.Sprintf("%s{%s,reason=%q}", metricname.Failures, labels, r), r)
	}
	for _, le := range []string{"0.5", "1", "2"} {
		in(fmt.Sprintf("%s_bucket{%s,le=%q}", metricname.TTFT, labels, le), "le"+le)
	}
	in(fmt.Sprintf("%s_bucket{%s,le=\"+Inf\"}", metricname.TTFT, labels), "le2")
	return ss, steps
}

// matrixResult is one cell of the table: times from the start of the
// outage (page, ticket) or of the recovery (resolve), and how many times
// a page and a ticket started firing. A time of never means it did not
// fire; notRun (and a count of -1) that the alerts were not evaluated.
type matrixResult struct {
	page, ticket, resolve time.Duration
	pages, tickets        int
}

const (
	never  = time.Duration(-1)
	notRun = time.Duration(-2)
)

// parseResults reads a scenario's want: per objective "page ticket
// resolve pages tickets", separated by "|"; times are Prometheus
// durations, "never" or "-" (not run).
func parseResults(want string) ([]matrixResult, error) {
	var rs []matrixResult
	for cell := range strings.SplitSeq(want, "|") {
		f := strings.Fields(cell)
		if len(f) != 5 {
			return nil, fmt.Errorf("cell %q: want 5 fields, got %d", cell, len(f))
		}
		var r matrixResult
		for i, p := range []*time.Duration{&r.page, &r.ticket, &r.resolve} {
			switch f[i] {
			case "never":
				*p = never
			case "-":
				*p = notRun
			default:
				d, err := model.ParseDuration(f[i])
				if err != nil {
					return nil, fmt.Errorf("cell %q: %w", cell, err)
				}
				*p = time.Duration(d)
			}
		}
		for i, p := range []*int{&r.pages, &r.tickets} {
			if f[3+i] == "-" {
				*p = -1
				continue
			}
			n, err := strconv.Atoi(f[3+i])
			if err != nil {
				return nil, fmt.Errorf("cell %q: %w", cell, err)
			}
			*p = n
		}
		rs = append(rs, r)
	}
	if len(rs) != len(matrixObjectives) {
		return nil, fmt.Errorf("%d cells, want one per objective (%d)", len(rs), len(matrixObjectives))
	}
	return rs, nil
}

// firing selects the firing alerts the scenario measures, of severity
// sev ("" for any).
func (sc matrixScenario) firing(sev string) string {
	var m []string
	if sc.alert != "" {
		m = append(m, fmt.Sprintf("alertname=~%q", sc.alert))
	}
	m = append(m, `alertstate="firing"`)
	if sev != "" {
		m = append(m, fmt.Sprintf("severity=%q", sev))
	}
	return "ALERTS{" + strings.Join(m, ",") + "}"
}

// matrixExprs measure the result at the end of the run: the first and
// last firing sample of the ALERTS series promtool records, and the
// number of steps at which a page or ticket started firing.
func matrixExprs(sc matrixScenario, end time.Duration, want matrixResult) []promtest.ExprTest {
	start, recovery, step := sc.warm, sc.warm+sc.bad, sc.step
	rng := fmt.Sprintf("[%s:%s]", plan.FmtDur(end), plan.FmtDur(step))
	at := plan.FmtDur(end)
	first := func(sev string) string {
		return fmt.Sprintf("min(min_over_time(timestamp(%s)%s)) - %s", sc.firing(sev), rng, plan.FmtF(start.Seconds()))
	}
	starts := func(sev string) string {
		return fmt.Sprintf("sum(count_over_time((max(%[1]s) unless max(%[1]s offset %[2]s))%[3]s))", sc.firing(sev), plan.FmtDur(step), rng)
	}
	resolve := fmt.Sprintf(`max(max_over_time(timestamp(%s)%s)) + %s - %s`, sc.firing(""), rng, plan.FmtF(step.Seconds()), plan.FmtF(recovery.Seconds()))
	sample := func(d time.Duration) []promtest.ExpSample {
		if d < 0 {
			return []promtest.ExpSample{}
		}
		return []promtest.ExpSample{{Labels: "{}", Value: d.Seconds()}}
	}
	count := func(n int) []promtest.ExpSample {
		if n == 0 {
			return []promtest.ExpSample{}
		}
		return []promtest.ExpSample{{Labels: "{}", Value: float64(n)}}
	}
	ts := []promtest.ExprTest{
		{Expr: first(rules.SeverityPage), EvalTime: at, ExpSamples: sample(want.page)},
		{Expr: first(rules.SeverityTicket), EvalTime: at, ExpSamples: sample(want.ticket)},
		{Expr: resolve, EvalTime: at, ExpSamples: sample(want.resolve)},
		{Expr: starts(rules.SeverityPage), EvalTime: at, ExpSamples: count(want.pages)},
		{Expr: starts(rules.SeverityTicket), EvalTime: at, ExpSamples: count(want.tickets)},
	}
	if sc.pagesOnly {
		ts = slices.Delete(ts, 4, 5)
		ts = slices.Delete(ts, 1, 2)
	}
	return ts
}

// alertRules keeps the alerts of rf that keep says and the recording rules
// they read, directly or through other recording rules, in their groups
// and order. Recording rules no alert reads (the 1h, 2h and 3d ones kept
// for dashboards) change no alert, and the longest of them are most of
// promtool's work. With keep = isPage the result holds only the pages: a
// page has no for:, so its state at an evaluation depends on its own
// expression alone, and the pages fire at exactly the same evaluations as
// with the full rule file, without the ticket's 1d windows.
func alertRules(rf *rules.RuleFile, keep func(rules.Rule) bool) *rules.RuleFile {
	need := map[string]bool{}
	kept := map[*rules.Rule]bool{}
	for gi := len(rf.Groups) - 1; gi >= 0; gi-- {
		rs := rf.Groups[gi].Rules
		for i := len(rs) - 1; i >= 0; i-- {
			r := &rs[i]
			if (r.Alert == "" || !keep(*r)) && (r.Record == "" || !need[r.Record]) {
				continue
			}
			kept[r] = true
			for _, tok := range strings.FieldsFunc(r.Expr, func(c rune) bool {
				return !(c == '_' || c == ':' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9')
			}) {
				need[tok] = true
			}
		}
	}
	out := &rules.RuleFile{}
	for _, g := range rf.Groups {
		ng := rules.RuleGroup{Name: g.Name, Interval: g.Interval}
		for i := range g.Rules {
			if kept[&g.Rules[i]] {
				ng.Rules = append(ng.Rules, g.Rules[i])
			}
		}
		if len(ng.Rules) > 0 {
			out.Groups = append(out.Groups, ng)
		}
	}
	return out
}

func isPage(r rules.Rule) bool { return r.Labels["severity"] == rules.SeverityPage }
func anyAlert(rules.Rule) bool { return true }

// matrixRules are the rules a scenario evaluates: every alert, or with
// pagesOnly the pages, and the recording rules they read.
func matrixRules(sc matrixScenario, rf *rules.RuleFile) *rules.RuleFile {
	if sc.pagesOnly {
		return alertRules(rf, isPage)
	}
	return alertRules(rf, anyAlert)
}

// fmtCell formats a measured time for the table.
func fmtCell(d time.Duration) string {
	switch {
	case d == notRun:
		return "not run"
	case d < 0:
		return "never"
	}
	return plan.FmtDur(d)
}
