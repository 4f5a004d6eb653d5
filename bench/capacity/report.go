package capacity

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/vllm-prober/vllm-prober/bench/pyfmt"
	"github.com/vllm-prober/vllm-prober/bench/stats"
	"github.com/vllm-prober/vllm-prober/probe"
)

// ServerInfo is what a capacity report says of the server: the model the
// requests named and the vLLM version from GET /version ("" when the
// server does not say).
type ServerInfo struct {
	Model   string `json:"model"`
	Version string `json:"version"`
}

// Header is what a capacity report states before its results, so the
// run can be audited: the server, the arrival process, the timeout, the
// warm-up and the pass rule.
type Header struct {
	Target, Probe string
	Server        ServerInfo
	Burstiness    float64
	Seed          int64
	Timeout       time.Duration // per request
	ReadyCheck    time.Duration // 0 = skipped
	Warmup        time.Duration // per level repeat, before its measured window
	Duration      time.Duration // the measured window of a level repeat
	Drain         time.Duration // 0 = each request until its timeout
	Repeats       int
	Order         string // of the staircase's runs
	Rule          string
}

// arrival describes the arrival process.
func (h Header) arrival() string {
	kind := "gamma gaps of shape " + pyfmt.Rate(h.Burstiness)
	switch {
	case math.IsInf(h.Burstiness, 1):
		kind = "constant gaps"
	case h.Burstiness == 1:
		kind = "exponential gaps (Poisson process)"
	}
	return fmt.Sprintf("open loop, %s of mean 1/rate, seed %d", kind, h.Seed)
}

// String renders the server for the report header.
func (s ServerInfo) String() string {
	v := s.Version
	if v == "" {
		v = "unknown (no /version)"
	}
	return fmt.Sprintf("model %s, vLLM version %s", s.Model, v)
}

// PrintHeader prints the header of a capacity report.
func PrintHeader(w io.Writer, h Header) {
	fmt.Fprintf(w, "Capacity search: target %s, probe %s\n", h.Target, h.Probe)
	fmt.Fprintf(w, "Server: %s\n", h.Server)
	fmt.Fprintf(w, "Arrivals: %s; levels run in %s order\n", h.arrival(), h.Order)
	drain := "each request until its timeout"
	if h.Drain > 0 {
		drain = h.Drain.String() + " after the last send, then unfinished"
	}
	fmt.Fprintf(w, "Timeout: %s per request; drain: %s\n", h.Timeout, drain)
	ready := "skipped"
	if h.ReadyCheck > 0 {
		ready = "up to " + h.ReadyCheck.String()
	}
	fmt.Fprintf(w, "Warm-up: %s at the level's rate before each %s measured window, not counted; ready check %s\n",
		h.Warmup, h.Duration, ready)
	fmt.Fprintf(w, "Pass rule: each of %d repeats has %s\n", h.Repeats, h.Rule)
}

// PrintTable prints one row per repeat: the offered rate, the requests
// offered and sent, the achieved send rate, completed throughput and
// goodput over the wall-clock window, acceptance, the token totals,
// unfinished requests and timeouts, p50 and the rule's percentile of TTFT,
// TPOT and E2EL with timeouts counted at the timeout, the failure mix and
// the verdict.
func PrintTable(w io.Writer, s *Search, rule PassRule) {
	pw := "p" + pyfmt.Percentile(rule.Percentile)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "offered/s\trepeat\toffered\tsent\tsent/s\tcompleted/s\tgoodput/s\tacceptance\tprompt tok\toutput tok\t"+
		"unfinished\ttimeouts\tttft p50\tttft %s\ttpot p50\ttpot %s\te2el p50\te2el %s\tsteady\tfailures\tresult\n", pw, pw, pw)
	for _, r := range s.Repeats {
		m := r.Metrics
		verdict := "PASS"
		if !r.Pass {
			verdict = "FAIL: " + strings.Join(r.Why, "; ")
		}
		steady := "yes"
		if r.NotSteady {
			steady = notSteady
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%s\t%s\t%s\t%s\t%d\t%d\t%d\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n",
			pyfmt.Float(r.Rate, 2), r.Index+1, m.Offered, m.Sent, pyfmt.Float(m.SendRate, 2), pyfmt.Float(m.CompletedThroughput, 2),
			pyfmt.Float(m.Goodput, 2), pyfmt.Float(m.Acceptance, 4), m.PromptTokens, m.OutputTokens,
			m.Dispositions[probe.Unfinished], m.Timeouts,
			msText(m, stats.MetricTTFT, 50), msText(m, stats.MetricTTFT, rule.Percentile),
			msText(m, stats.MetricTPOT, 50), msText(m, stats.MetricTPOT, rule.Percentile),
			msText(m, stats.MetricE2EL, 50), msText(m, stats.MetricE2EL, rule.Percentile),
			steady, failureMix(m), verdict)
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
		fmt.Fprintf(w, "Rated capacity: at least %s req/s (no level failed; extend the staircase)\n", pyfmt.Float(s.Rated, 2))
	default:
		fmt.Fprintf(w, "Rated capacity: %s req/s (lowest failing load %s req/s)\n", pyfmt.Float(s.Rated, 2), pyfmt.Float(s.LowestFail, 2))
	}
}

// msText renders percentile p of a metric in ms, "-" when not measured.
func msText(m stats.Metrics, name string, p float64) string {
	v := m.LatencyPercentile(name, p)
	if math.IsNaN(v) {
		return "-"
	}
	return pyfmt.Float(v, 1) + "ms"
}

// failureMix lists the dispositions other than accepted that occurred.
func failureMix(m stats.Metrics) string {
	var parts []string
	for _, d := range stats.AllDispositions {
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
	Abandoned           int                `json:"abandoned"`
	Sent                int                `json:"sent"`
	SendRate            any                `json:"send_rate"`
	ServerCompleted     int                `json:"completed"`
	WallClockS          float64            `json:"wall_clock_s"`
	CompletedThroughput float64            `json:"completed_throughput"`
	Goodput             float64            `json:"goodput"`
	AcceptanceRatio     float64            `json:"acceptance_ratio"`
	PromptTokens        int                `json:"prompt_tokens"`
	OutputTokens        int                `json:"output_tokens"`
	Unfinished          int                `json:"unfinished"`
	Timeouts            int                `json:"timeouts"`
	TTFTMS              map[string]float64 `json:"ttft_ms"`
	TPOTMS              map[string]float64 `json:"tpot_ms"`
	E2ELMS              map[string]float64 `json:"e2el_ms"`
	Dispositions        map[string]int     `json:"dispositions"`
	FailureReasons      map[string]int     `json:"failure_reasons"`
	NotSteady           bool               `json:"not_steady"`
	// The medians of the steady check's thirds: TTFT's, or E2EL's for an
	// embeddings probe (whose TTFT keys are then 0, as when not judged).
	TTFTFirstThirdMS float64 `json:"ttft_p50_first_third_ms"`
	TTFTLastThirdMS  float64 `json:"ttft_p50_last_third_ms"`
	E2ELFirstThirdMS float64 `json:"e2el_p50_first_third_ms,omitempty"`
	E2ELLastThirdMS  float64 `json:"e2el_p50_last_third_ms,omitempty"`
}

// headerJSON is the header of the saved capacity report.
type headerJSON struct {
	Target      string     `json:"target"`
	Probe       string     `json:"probe"`
	Server      ServerInfo `json:"server"`
	Arrival     string     `json:"arrival"`
	Burstiness  any        `json:"burstiness"`
	Seed        int64      `json:"seed"`
	TimeoutS    float64    `json:"timeout_s"`
	ReadyCheckS float64    `json:"ready_check_s"`
	WarmupS     float64    `json:"warmup_s"`
	DurationS   float64    `json:"level_duration_s"`
	DrainS      float64    `json:"drain_s"`
	Repeats     int        `json:"repeats"`
	Order       string     `json:"order"`
}

// searchJSON is the saved capacity report.
type searchJSON struct {
	Rule          string       `json:"rule"`
	RatedCapacity float64      `json:"rated_capacity"`
	HighestPass   float64      `json:"highest_pass"`
	LowestFail    any          `json:"lowest_fail"` // null when no level failed
	Saturated     bool         `json:"saturated"`
	Header        *headerJSON  `json:"header,omitempty"`
	Settings      any          `json:"settings,omitempty"`
	Levels        []repeatJSON `json:"levels"`
}

// Marshal renders the capacity report as JSON: the header (nil for
// none), settings (any description of the run to keep beside the
// results) and every repeat.
func Marshal(s *Search, h *Header, settings any) ([]byte, error) {
	out := searchJSON{Rule: s.Rule, RatedCapacity: s.Rated, HighestPass: s.HighestPass, Saturated: s.Saturated, Settings: settings}
	if h != nil {
		out.Header = &headerJSON{Target: h.Target, Probe: h.Probe, Server: h.Server, Arrival: h.arrival(),
			Burstiness: pyfmt.JSONFloat(h.Burstiness), Seed: h.Seed, TimeoutS: h.Timeout.Seconds(), ReadyCheckS: h.ReadyCheck.Seconds(),
			WarmupS: h.Warmup.Seconds(), DurationS: h.Duration.Seconds(), DrainS: h.Drain.Seconds(), Repeats: h.Repeats,
			Order: h.Order}
	}
	if s.Saturated {
		out.LowestFail = s.LowestFail
	}
	for _, r := range s.Repeats {
		out.Levels = append(out.Levels, newRepeatJSON(r))
	}
	b, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode capacity report: %w", err)
	}
	return append(b, '\n'), nil
}

// newRepeatJSON renders one repeat.
func newRepeatJSON(r Repeat) repeatJSON {
	m := r.Metrics
	disp := map[string]int{}
	for d, n := range m.Dispositions {
		disp[string(d)] = n
	}
	out := repeatJSON{
		OfferedRate: r.Rate, Repeat: r.Index + 1, Pass: r.Pass, Why: r.Why, Offered: m.Offered, Abandoned: m.Abandoned,
		Sent: m.Sent, SendRate: pyfmt.JSONFloat(m.SendRate), ServerCompleted: m.ServerCompleted, WallClockS: m.Window.Seconds(),
		CompletedThroughput: m.CompletedThroughput, Goodput: m.Goodput, AcceptanceRatio: m.Acceptance,
		PromptTokens: m.PromptTokens, OutputTokens: m.OutputTokens, Unfinished: m.Dispositions[probe.Unfinished],
		Timeouts: m.Timeouts, TTFTMS: pctMap(m, stats.MetricTTFT), TPOTMS: pctMap(m, stats.MetricTPOT), E2ELMS: pctMap(m, stats.MetricE2EL),
		Dispositions: disp, FailureReasons: m.Reasons, NotSteady: r.NotSteady,
	}
	if m.SteadyMetric == stats.MetricE2EL {
		out.E2ELFirstThirdMS, out.E2ELLastThirdMS = m.SteadyFirstThird, m.SteadyLastThird
	} else {
		out.TTFTFirstThirdMS, out.TTFTLastThirdMS = m.SteadyFirstThird, m.SteadyLastThird
	}
	return out
}

// pctMap returns a metric's percentiles keyed "p50", "p99", ...; none
// when no request measured it (stats.Dist.Empty).
func pctMap(m stats.Metrics, name string) map[string]float64 {
	out := map[string]float64{}
	if m.Latency[name].Empty {
		return out
	}
	for _, p := range m.Latency[name].Percentiles {
		out["p"+pyfmt.Percentile(p.P)] = p.MS
	}
	return out
}
