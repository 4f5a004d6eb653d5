// Package plan decides what the generated alerting rules are, from a
// vllm-prober configuration and the rules' options: per (target, probe)
// pair its burn-rate windows (widened, or dropped, for low traffic or an
// objective the windows cannot judge), its p99 latency windows and its
// count window; per target the window of VLLMProbeTargetDown; the set of
// recorded windows; the thresholds the alerts share; and a warning for
// every adjustment. Package rules renders a plan as Prometheus rules and
// package rules/promtest as the promtool tests that prove them, so both
// read one set of decisions.
package plan

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/common/model"

	"github.com/vllm-prober/vllm-prober/collector/metricname"
	"github.com/vllm-prober/vllm-prober/config"
)

// Severities of the generated alerts.
const (
	SeverityPage   = "page"
	SeverityTicket = "ticket"
)

// burnPair is one multi-window multi-burn-rate condition (SRE workbook,
// chapter 5): the error budget burns Factor times too fast over both windows.
type burnPair struct {
	Severity    string
	Factor      float64
	Long, Short time.Duration
}

// docs/alerts.md, "Why these windows", gives the reason for each pair and
// the scenario matrix (rules/matrix_test.go) measures them: the 12x pair pages a
// total outage within 2 minutes and a 50% one within 5, the 8x pair a 10%
// outage at a 99% objective within 30 minutes, the 6x pair a burn too low
// for either within hours, and the 1x ticket a leak above the objective
// within a day. Every short window is at most 10m, so an alert resolves
// within 10 minutes of recovery plus an evaluation.
var burnPairs = []burnPair{
	{SeverityPage, 12, 10 * time.Minute, 5 * time.Minute},
	{SeverityPage, 8, 30 * time.Minute, 5 * time.Minute},
	{SeverityPage, 6, 6 * time.Hour, 10 * time.Minute},
	{SeverityTicket, 1, 24 * time.Hour, 10 * time.Minute},
}

// StandardWindows are always recorded (before scaling).
var StandardWindows = []time.Duration{
	5 * time.Minute, 10 * time.Minute, 30 * time.Minute, time.Hour, 2 * time.Hour, 6 * time.Hour, 24 * time.Hour, 72 * time.Hour,
}

// noiseHorizon and maxFalseAlerts are the statistical guard of a burn
// pair: on a service failing half its error budget at random (Poisson),
// the long window may exceed the burn threshold at most maxFalseAlerts
// times, expected, over noiseHorizon (before scaling), counting one try
// per long window.
const (
	noiseHorizon   = 30 * 24 * time.Hour
	maxFalseAlerts = 0.05
)

// countWindows are the candidate windows (before scaling) of a pair's
// not-completing and in-flight cap alerts and of a target's
// VLLMProbeTargetDown: the shortest expected to hold MinCountWindow
// requests, else the last.
var countWindows = []time.Duration{5 * time.Minute, 30 * time.Minute, time.Hour, 2 * time.Hour, 6 * time.Hour}

// maxLatencyWindow bounds the widening of a p99 latency window (before scaling).
const maxLatencyWindow = 6 * time.Hour

// latencyWidenUnit is the step in which a p99 window is widened (before scaling).
const latencyWidenUnit = 5 * time.Minute

// MinCountWindow is how many requests a pair's count window should
// expect: the window over which the not-completing and in-flight cap
// alerts judge the pair.
const MinCountWindow = 10

// Burn is the decided form of one burn pair for one (target, probe).
type Burn struct {
	burnPair
	Note string // why the windows were widened; "" when not
}

// Latency is one p99 latency alert of a pair.
type Latency struct {
	SLO       string // ttft | ttfa | tpot | e2el
	Threshold time.Duration
	Window    time.Duration
	Note      string
}

// Pair is everything decided for one (target, probe).
type Pair struct {
	Target, Probe string
	Rate          float64
	Objective     float64
	Burns         []Burn
	Latency       []Latency
	CountWindow   time.Duration // window of the not-completing and in-flight cap alerts
	Hist          config.HistogramSelection
	// Fingerprint: the probe watches its output fingerprint
	// (VLLMProbeOutputChanged).
	Fingerprint bool
	// Replicas: the target discovers replicas, each probed as its own
	// series (VLLMProbeReplicaFailing); Gateway: it has a url too, whose
	// series sit in front of them (VLLMProbeGatewayFailing).
	Replicas, Gateway bool
	// LeanReplicas: Hist is the lean selection of replica pairs
	// (config.LeanHistograms), because the target has only replicas and
	// the file chose no histograms.
	LeanReplicas bool
}

// Selector selects the pair's series: {target="...",probe="..."}.
func (pp Pair) Selector() string {
	return fmt.Sprintf("{target=%q,probe=%q}", pp.Target, pp.Probe)
}

// leanReplicasLeaveOut says, for the warnings, that the replica pairs'
// lean histograms, which pp's alerts read (LeanReplicas), leave out name,
// and how to get it.
func leanReplicasLeaveOut(name, metric string) string {
	return fmt.Sprintf("the lean histograms of the replica pairs (a target with discovery and no url, no histograms: in the file) leave out %s (%s); list %s in the probe's histograms to get the alert", name, metric, name)
}

// Target is what is decided for one target: the window of
// VLLMProbeTargetDown, which judges all the target's probes together.
type Target struct {
	Name   string
	Rate   float64 // requests per second over all the target's probes
	Window time.Duration
	// Gateway: the target has a url and discovery; its target-level
	// alerts read only the gateway's series (rules/fleet.go, gatewaySeries).
	Gateway bool
	// Discovery: the target has `discovery:`, whose Mechanism refreshes
	// every Refresh; its refreshes are judged failing when at least
	// DiscoveryFailures of them failed over DiscoveryWindow
	// (planDiscovery; VLLMProbeNoReplicas and VLLMProberDiscoveryFailing).
	Discovery         bool
	Mechanism         string
	Refresh           time.Duration
	DiscoveryWindow   time.Duration
	DiscoveryFailures int
}

// Plan is everything decided for one configuration.
type Plan struct {
	// Options are the options with their defaults filled in.
	Options Options
	// Gran is the granularity of every window: each is a multiple of it.
	Gran time.Duration
	// Windows are the recorded windows, sorted: the standard ones and
	// every widened burn window.
	Windows []time.Duration
	// Gateways are the targets with a url and discovery, in config order.
	Gateways []string
	// Pairs are the (target, probe) pairs, in config order.
	Pairs []Pair
	// Targets are the targets with at least one probe, in config order.
	Targets []Target
	// Warnings are the adjustments the operator should know of.
	Warnings []Warning
}

// New decides the plan of cfg's rules with options o (zero values take
// their defaults). It fails on a nil config, negative options, or a
// probe whose rate or objective the windows cannot judge.
func New(cfg *config.Config, o Options) (*Plan, error) {
	if cfg == nil {
		return nil, errors.New("generate rules: nil config")
	}
	o, err := o.withDefaults()
	if err != nil {
		return nil, fmt.Errorf("generate rules: %w", err)
	}
	p := &Plan{Options: o, Gran: time.Minute}
	if o.WindowScale < 1 {
		p.Gran = time.Second
	}
	for _, pr := range cfg.Probes {
		if pr.Rate <= 0 || math.IsNaN(pr.Rate) || math.IsInf(pr.Rate, 0) {
			return nil, fmt.Errorf("generate rules: probe %q: rate must be a positive number", pr.Name)
		}
		if !(pr.Objective > 0 && pr.Objective < 1) {
			return nil, fmt.Errorf("generate rules: probe %q: objective %v must be between 0 and 1", pr.Name, pr.Objective)
		}
	}
	for _, t := range cfg.Targets {
		tp := Target{Name: t.Name, Gateway: t.Discovery != nil && t.URL != ""}
		if t.Discovery != nil {
			p.planDiscovery(&tp, t.Discovery.Mechanism(), t.Discovery.RefreshInterval())
		}
		if tp.Gateway {
			p.Gateways = append(p.Gateways, t.Name)
		}
		for _, pr := range cfg.ProbesFor(t) {
			// A target with discovery and no url has only replica pairs,
			// and its alerts read their series: the histograms they
			// export, lean unless the file chose some, are the pair's.
			lean := t.Discovery != nil && t.URL == "" && !pr.HistogramsWritten
			if lean {
				pr = pr.ReplicaHistograms()
			}
			pp := p.planPair(t.Name, pr, lean)
			pp.Replicas = t.Discovery != nil
			pp.Gateway = pp.Replicas && t.URL != ""
			if pp.Replicas && pr.RateSplit {
				p.warnRateSplit(&pp, t.MaxReplicas)
			}
			p.Pairs = append(p.Pairs, pp)
			tp.Rate += pr.Rate
		}
		if tp.Rate > 0 {
			p.Targets = append(p.Targets, p.planTarget(tp))
		}
	}
	p.collectWindows()
	p.warnUncovered(metricname.ScheduleLag, "schedule lag")
	p.warnTargetsWithout(metricname.TTFT, "client TTFT above server")
	return p, nil
}

// warnRateSplit warns when rate_split can leave a replica's share of
// pp's rate too small for the fleet alerts: a replica is judged only once
// the short window of a page burn pair holds MinCountWindow of its
// requests (rules/fleet.go), so a fleet of more replicas than fit the
// longest such window, up to maxReplicas (0: the default), is not paged
// per replica (docs/alerts.md, "Replica windows and rate_split").
func (p *Plan) warnRateSplit(pp *Pair, maxReplicas int) {
	if maxReplicas <= 0 {
		maxReplicas = config.DefaultMaxReplicas
	}
	var short time.Duration
	for _, b := range pp.Burns {
		if b.Severity == SeverityPage {
			short = max(short, b.Short)
		}
	}
	if short == 0 {
		return // no page burn pair: no fleet alert to miss
	}
	fit := int(math.Floor(pp.Rate * short.Seconds() / MinCountWindow))
	if fit >= maxReplicas {
		return
	}
	if fit == 0 {
		p.warn(pp, "replica failing", "judges no replica: rate %g/s holds %.1f requests in the longest page short window %s (want %d) even for one replica",
			pp.Rate, pp.Rate*short.Seconds(), FmtDur(short), MinCountWindow)
		return
	}
	p.warn(pp, "replica failing", "with rate_split judges a fleet of at most %d replicas (max_replicas %d): each gets %g/s / N, and the longest page short window %s must hold %d of a replica's requests; "+
		"the replicas of a larger fleet are not paged one by one (the pair's burn still judges the target)", fit, maxReplicas, pp.Rate, FmtDur(short), MinCountWindow)
}

// Scale applies WindowScale and rounds to the granularity (at least one).
func (p *Plan) Scale(d time.Duration) time.Duration {
	s := time.Duration(math.Round(float64(d)*p.Options.WindowScale/float64(p.Gran))) * p.Gran
	return max(s, p.Gran)
}

func (p *Plan) planPair(target string, pr config.Probe, lean bool) Pair {
	pp := Pair{Target: target, Probe: pr.Name, Rate: pr.Rate, Objective: pr.Objective, Hist: pr.HistogramSelection(), Fingerprint: pr.Fingerprint != nil, LeanReplicas: lean}
	for _, bp := range burnPairs {
		if b, ok := p.planBurn(&pp, bp); ok {
			pp.Burns = p.addBurn(&pp, pp.Burns, b)
		}
	}
	slos := []struct {
		name string
		d    model.Duration
	}{{"ttft", pr.SLO.TTFT}, {"ttfa", pr.SLO.TTFA}, {"tpot", pr.SLO.TPOT}, {"e2el", pr.SLO.E2EL}}
	for _, s := range slos {
		if s.d <= 0 {
			continue
		}
		if l, ok := p.planLatency(&pp, s.name, time.Duration(s.d)); ok {
			pp.Latency = append(pp.Latency, l)
		}
	}
	pp.CountWindow = p.countWindow(pr.Rate)
	return pp
}

// planTarget decides VLLMProbeTargetDown's window for tp, and warns when
// even the longest holds fewer than MinCountWindow requests expected: the
// alert then needs TargetDownMinRequests failures within it, which an
// outage of a target that slow may take longer than the window to reach.
func (p *Plan) planTarget(tp Target) Target {
	tp.Window = p.countWindow(tp.Rate)
	if n := tp.Rate * tp.Window.Seconds(); n < MinCountWindow {
		msg := fmt.Sprintf("rate %g/s holds %.1f requests in %s (want %d); it fires only once %d requests ended in %s, at least 90%% in server_failure",
			RoundF(tp.Rate), n, FmtDur(tp.Window), MinCountWindow, TargetDownMinRequests, FmtDur(tp.Window))
		p.Warnings = append(p.Warnings, Warning{Target: tp.Name, Alert: "target down", Message: msg})
	}
	return tp
}

// DiscoveryWindowMin is the shortest window (before scaling) over which
// a target's failed discovery refreshes are counted.
const DiscoveryWindowMin = 15 * time.Minute

// planDiscovery decides the window and threshold of
// VLLMProberDiscoveryFailing for tp, whose mechanism refreshes every
// refresh. The prober counts failed refreshes but not successful ones, so
// the alert reads the failures alone against the refreshes the interval
// makes: the window is DiscoveryWindowMin (scaled) or four refreshes,
// whichever is longer, rounded up to the granularity, and the threshold
// half the refreshes it holds, at least two. Most refreshes failing fires;
// one failed refresh never does.
func (p *Plan) planDiscovery(tp *Target, mechanism string, refresh time.Duration) {
	if refresh <= 0 { // a validated config always has one
		refresh = p.Gran
	}
	tp.Discovery, tp.Mechanism, tp.Refresh = true, mechanism, refresh
	w := max(p.Scale(DiscoveryWindowMin), 4*refresh)
	w = (w + p.Gran - 1) / p.Gran * p.Gran
	tp.DiscoveryWindow = w
	tp.DiscoveryFailures = max(2, int(math.Ceil(float64(w)/float64(2*refresh))))
}

// countWindow is the shortest of countWindows (scaled) expected to hold
// MinCountWindow requests at rate, else the longest.
func (p *Plan) countWindow(rate float64) time.Duration {
	for _, w := range countWindows {
		if rate*p.Scale(w).Seconds() >= MinCountWindow {
			return p.Scale(w)
		}
	}
	return p.Scale(countWindows[len(countWindows)-1])
}

func (p *Plan) warn(pp *Pair, alert, format string, args ...any) string {
	msg := fmt.Sprintf(format, args...)
	p.Warnings = append(p.Warnings, Warning{Target: pp.Target, Probe: pp.Probe, Alert: alert, Message: msg})
	return msg
}

// planBurn decides one burn pair's windows. The short window must hold
// MinRequests on average; and because both windows must exceed the
// threshold and the long one holds more requests, one failure fires the
// alert when 1/n > factor*(1-objective), n the requests the long window
// counts. rate() counts those between the window's first and last sample,
// which at a low rate is one request fewer than rate*long as often as not,
// so n is taken as rate*long-1. Either way both
// windows are multiplied by the smallest whole number that fixes it; a pair whose
// long window would then exceed the longest standard window is dropped, as
// is one whose threshold needs more than 100% failures.
func (p *Plan) planBurn(pp *Pair, bp burnPair) (Burn, bool) {
	alert := fmt.Sprintf("%s burn %gx over %s/%s", bp.Severity, bp.Factor, FmtDur(bp.Long), FmtDur(bp.Short))
	budget := 1 - pp.Objective
	if bp.Factor*budget >= 1 {
		p.warn(pp, alert, "dropped: objective %g leaves an error budget of %g, so a %gx burn would need more than 100%% failures", pp.Objective, RoundF(budget), bp.Factor)
		return Burn{}, false
	}
	long, short := p.Scale(bp.Long), p.Scale(bp.Short)
	inShort := pp.Rate * short.Seconds()
	inLong := pp.Rate * long.Seconds()
	k := math.Ceil(max(1, p.Options.MinRequests/inShort, (1/(bp.Factor*budget)+1)/inLong))
	kCount := k
	horizon := p.Scale(noiseHorizon).Seconds()
	for ; falseAlerts(pp.Rate*long.Seconds()*k, budget, bp.Factor, horizon/(long.Seconds()*k)) > maxFalseAlerts; k++ {
		if long*time.Duration(k) > p.Scale(StandardWindows[len(StandardWindows)-1]) {
			break
		}
	}
	b := Burn{burnPair: bp}
	b.Long, b.Short = long, short
	if k == 1 {
		return b, true
	}
	var whys []string
	if inShort < p.Options.MinRequests {
		whys = append(whys, fmt.Sprintf("rate %g/s holds %.1f requests in %s (want %g)", pp.Rate, inShort, FmtDur(short), p.Options.MinRequests))
	}
	if oneFails := 1 / (max(inLong-1, 0) * budget); oneFails > bp.Factor {
		whys = append(whys, fmt.Sprintf("one failure in the %.1f requests of %s (one fewer as the window counts them) burns %.1fx, above the %gx threshold", inLong, FmtDur(long), oneFails, bp.Factor))
	}
	if k > kCount {
		n := pp.Rate * long.Seconds() * kCount
		whys = append(whys, fmt.Sprintf("failures at random at half the budget would fire it %.2g times in %s over %s windows (want at most %g)",
			falseAlerts(n, budget, bp.Factor, horizon/(long.Seconds()*kCount)), FmtDur(p.Scale(noiseHorizon)), FmtDur(long*time.Duration(kCount)), maxFalseAlerts))
	}
	why := strings.Join(whys, " and ")
	maxLong := p.Scale(StandardWindows[len(StandardWindows)-1])
	wl, ws := long*time.Duration(k), short*time.Duration(k)
	if wl > maxLong {
		p.warn(pp, alert, "dropped: %s; widening to %s/%s would exceed %s", why, FmtDur(wl), FmtDur(ws), FmtDur(maxLong))
		return Burn{}, false
	}
	b.Long, b.Short = wl, ws
	b.Note = p.warn(pp, alert, "windows widened from %s/%s to %s/%s: %s", FmtDur(long), FmtDur(short), FmtDur(wl), FmtDur(ws), why)
	return b, true
}

// falseAlerts is how many times, expected, the long window of a burn pair
// holding n requests exceeds factor on a service whose requests fail at
// random at half the budget, over tries independent windows: tries times
// P(Poisson(n*budget/2) > factor*budget*n).
func falseAlerts(n, budget, factor, tries float64) float64 {
	lambda := n * budget / 2
	m := math.Floor(factor*budget*n) + 1 // failures needed to exceed the threshold
	if lambda <= 0 {
		return 0
	}
	lg, _ := math.Lgamma(m + 1)
	term := math.Exp(-lambda + m*math.Log(lambda) - lg)
	sum := 0.0
	for i := m; term > 0 && (i < lambda+10 || term > 1e-18*sum); i++ {
		sum += term
		term *= lambda / (i + 1)
	}
	return tries * min(1, sum)
}

// addBurn appends b unless widening gave it the same windows as another
// pair of the same severity; then only the lower factor is kept, since it
// fires whenever the higher one would.
func (p *Plan) addBurn(pp *Pair, burns []Burn, b Burn) []Burn {
	for i, o := range burns {
		if o.Severity != b.Severity || o.Long != b.Long || o.Short != b.Short {
			continue
		}
		keep, drop := o, b
		if b.Factor < o.Factor {
			keep, drop = b, o
		}
		burns[i] = keep
		p.warn(pp, fmt.Sprintf("%s burn %gx", drop.Severity, drop.Factor),
			"dropped: widened to the same %s/%s windows as the %gx alert, which fires first", FmtDur(drop.Long), FmtDur(drop.Short), keep.Factor)
		return burns
	}
	return append(burns, b)
}

// planLatency widens a p99 window, in steps of latencyWidenUnit, until it
// holds MinLatencySamples.
func (p *Plan) planLatency(pp *Pair, slo string, threshold time.Duration) (Latency, bool) {
	alert := "p99 " + slo
	if !pp.Hist.Has(slo) {
		if pp.LeanReplicas {
			p.warn(pp, alert, "dropped, no p99 to judge: %s", leanReplicasLeaveOut(slo, SLOMetric[slo]))
			return Latency{}, false
		}
		p.warn(pp, alert, "dropped: the probe's histograms leave out %s (%s), so there is no p99 to judge; add %s to them to get the alert", slo, SLOMetric[slo], slo)
		return Latency{}, false
	}
	w := p.Scale(p.Options.LatencyWindow)
	l := Latency{SLO: slo, Threshold: threshold, Window: w}
	n := pp.Rate * w.Seconds()
	if n >= p.Options.MinLatencySamples {
		return l, true
	}
	unit := p.Scale(latencyWidenUnit)
	need := time.Duration(math.Ceil(p.Options.MinLatencySamples/pp.Rate/unit.Seconds())) * unit
	why := fmt.Sprintf("rate %g/s holds %.1f requests in %s (want %g for a p99)", pp.Rate, n, FmtDur(w), p.Options.MinLatencySamples)
	if maxW := p.Scale(maxLatencyWindow); need > maxW {
		p.warn(pp, alert, "dropped: %s; it would need %s, more than %s", why, FmtDur(need), FmtDur(maxW))
		return Latency{}, false
	}
	l.Window = need
	l.Note = p.warn(pp, alert, "window widened from %s to %s: %s", FmtDur(w), FmtDur(need), why)
	return l, true
}

// collectWindows is the sorted set of recorded windows: the standard ones
// plus every widened burn window.
func (p *Plan) collectWindows() {
	set := map[time.Duration]bool{}
	for _, w := range StandardWindows {
		set[p.Scale(w)] = true
	}
	for _, pp := range p.Pairs {
		for _, b := range pp.Burns {
			set[b.Long], set[b.Short] = true, true
		}
	}
	for w := range set {
		p.Windows = append(p.Windows, w)
	}
	sort.Slice(p.Windows, func(i, j int) bool { return p.Windows[i] < p.Windows[j] })
}

// FmtDur formats a duration the way Prometheus writes it (1h30m, 1d, 5s).
func FmtDur(d time.Duration) string { return model.Duration(d).String() }

// RoundF removes float noise such as 1-0.99 = 0.010000000000000009.
func RoundF(f float64) float64 { return math.Round(f*1e9) / 1e9 }

// FmtF formats a number for PromQL and annotations.
func FmtF(f float64) string { return strconv.FormatFloat(RoundF(f), 'f', -1, 64) }
