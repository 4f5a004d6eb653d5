package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"

	"github.com/vllm-prober/vllm-prober/probe"
)

// PrintTable prints one row per repeat: offered and achieved rates,
// throughput, goodput, acceptance, p50 and the rule's percentile of TTFT,
// TPOT and E2EL, the failure mix and the verdict.
func PrintTable(w io.Writer, s *Search, rule PassRule) {
	pw := "p" + percentileWord(rule.Percentile)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "offered/s\trepeat\tsent/s\tcompleted/s\tgoodput/s\tacceptance\tttft p50\tttft %s\ttpot p50\ttpot %s\te2el p50\te2el %s\tfailures\tresult\n", pw, pw, pw)
	for _, r := range s.Repeats {
		m := r.Metrics
		verdict := "PASS"
		if !r.Pass {
			verdict = "FAIL: " + strings.Join(r.Why, "; ")
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n",
			pyFloat(r.Rate, 2), r.Index+1, pyFloat(m.SendRate, 2), pyFloat(m.CompletedThroughput, 2), pyFloat(m.Goodput, 2),
			pyFloat(m.Acceptance, 4),
			msText(m, MetricTTFT, 50), msText(m, MetricTTFT, rule.Percentile),
			msText(m, MetricTPOT, 50), msText(m, MetricTPOT, rule.Percentile),
			msText(m, MetricE2EL, 50), msText(m, MetricE2EL, rule.Percentile),
			failureMix(m), verdict)
	}
	_ = tw.Flush()
}

// PrintVerdict prints the rule and the rated capacity.
func PrintVerdict(w io.Writer, s *Search) {
	fmt.Fprintf(w, "Pass rule: every repeat has %s\n", s.Rule)
	switch {
	case s.Rated == 0:
		fmt.Fprintln(w, "Rated capacity: none (the lowest level failed; start the staircase lower)")
	case !s.Saturated:
		fmt.Fprintf(w, "Rated capacity: at least %s req/s (no level failed; extend the staircase)\n", pyFloat(s.Rated, 2))
	default:
		fmt.Fprintf(w, "Rated capacity: %s req/s (lowest failing load %s req/s)\n", pyFloat(s.Rated, 2), pyFloat(s.LowestFail, 2))
	}
}

// msText renders percentile p of a metric in ms, "-" when not measured.
func msText(m Metrics, name string, p float64) string {
	v := percentileOf(m, name, p)
	if math.IsNaN(v) {
		return "-"
	}
	return pyFloat(v, 1) + "ms"
}

// failureMix lists the dispositions other than accepted that occurred.
func failureMix(m Metrics) string {
	var parts []string
	for _, d := range AllDispositions {
		if n := m.Dispositions[d]; n > 0 && d != probe.Accepted {
			parts = append(parts, fmt.Sprintf("%s=%d", d, n))
		}
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, ",")
}

// repeatJSON is one repeat in the saved capacity report.
type repeatJSON struct {
	OfferedRate         float64            `json:"offered_rate"`
	Repeat              int                `json:"repeat"`
	Pass                bool               `json:"pass"`
	Why                 []string           `json:"why,omitempty"`
	Offered             int                `json:"offered"`
	Sent                int                `json:"sent"`
	SendRate            any                `json:"send_rate"`
	CompletedThroughput float64            `json:"completed_throughput"`
	Goodput             float64            `json:"goodput"`
	AcceptanceRatio     float64            `json:"acceptance_ratio"`
	TTFTMS              map[string]float64 `json:"ttft_ms"`
	TPOTMS              map[string]float64 `json:"tpot_ms"`
	E2ELMS              map[string]float64 `json:"e2el_ms"`
	Dispositions        map[string]int     `json:"dispositions"`
	FailureReasons      map[string]int     `json:"failure_reasons"`
}

// searchJSON is the saved capacity report.
type searchJSON struct {
	Rule          string       `json:"rule"`
	RatedCapacity float64      `json:"rated_capacity"`
	HighestPass   float64      `json:"highest_pass"`
	LowestFail    any          `json:"lowest_fail"` // null when no level failed
	Saturated     bool         `json:"saturated"`
	Settings      any          `json:"settings,omitempty"`
	Levels        []repeatJSON `json:"levels"`
}

// MarshalSearch renders the capacity report as JSON; settings is any
// description of the run (flags, probe) to keep beside the results.
func MarshalSearch(s *Search, settings any) ([]byte, error) {
	out := searchJSON{Rule: s.Rule, RatedCapacity: s.Rated, HighestPass: s.HighestPass, Saturated: s.Saturated, Settings: settings}
	if s.Saturated {
		out.LowestFail = s.LowestFail
	}
	for _, r := range s.Repeats {
		m := r.Metrics
		disp := map[string]int{}
		for d, n := range m.Dispositions {
			disp[string(d)] = n
		}
		out.Levels = append(out.Levels, repeatJSON{
			OfferedRate: r.Rate, Repeat: r.Index + 1, Pass: r.Pass, Why: r.Why, Offered: m.Offered, Sent: m.Sent,
			SendRate: jsonFloat(m.SendRate), CompletedThroughput: m.CompletedThroughput, Goodput: m.Goodput,
			AcceptanceRatio: m.Acceptance, TTFTMS: pctMap(m, MetricTTFT), TPOTMS: pctMap(m, MetricTPOT),
			E2ELMS: pctMap(m, MetricE2EL), Dispositions: disp, FailureReasons: m.Reasons,
		})
	}
	b, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode capacity report: %w", err)
	}
	return append(b, '\n'), nil
}

// pctMap returns a metric's percentiles keyed "p50", "p99", ....
func pctMap(m Metrics, name string) map[string]float64 {
	out := map[string]float64{}
	for _, p := range m.Latency[name].Percentiles {
		out["p"+percentileWord(p.P)] = p.MS
	}
	return out
}
