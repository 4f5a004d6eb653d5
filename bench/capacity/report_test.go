package capacity

import (
	"bytes"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/vllm-prober/vllm-prober/bench/openloop"
	"github.com/vllm-prober/vllm-prober/bench/stats"
	"github.com/vllm-prober/vllm-prober/probe"
)

func TestPrintTable(t *testing.T) {
	s := &Search{Rule: "acceptance >= 0.9900", Rated: 2, Saturated: true, LowestFail: 4, Repeats: []Repeat{
		{Rate: 2, Pass: true, Metrics: stats.Metrics{Acceptance: 1, SendRate: 2, CompletedThroughput: 2, Goodput: 2,
			Latency: map[string]stats.Dist{stats.MetricTTFT: {Percentiles: []stats.Percentile{{P: 50, MS: 10}, {P: 99, MS: 20}}}}}},
		{Rate: 4, Why: []string{"acceptance 0.5000 < 0.9900"}, Metrics: stats.Metrics{Acceptance: 0.5,
			Dispositions: map[probe.Disposition]int{probe.Accepted: 1, probe.ClientTimeout: 1}}},
	}}
	var buf bytes.Buffer
	PrintTable(&buf, s, PassRule{MinAcceptance: 0.99, Percentile: 99})
	PrintVerdict(&buf, s)
	for _, want := range []string{"ttft p99", "10.0ms", "20.0ms", "client_timeout=1", "FAIL: acceptance 0.5000 < 0.9900", "PASS",
		"Rated capacity: 2.00 req/s (lowest failing load 4.00 req/s)", "Pass rule: every repeat has acceptance >= 0.9900"} {
		t.Run(want, func(t *testing.T) {
			if !strings.Contains(buf.String(), want) {
				t.Errorf("table lacks %q:\n%s", want, buf.String())
			}
		})
	}
	b, err := Marshal(s, nil, nil)
	if err != nil || !strings.Contains(string(b), `"rated_capacity": 2`) || !strings.Contains(string(b), `"lowest_fail": 4`) {
		t.Errorf("JSON %s, %v", b, err)
	}
}

// TestPrintTableNotMeasured runs a level the server refused whole: 10
// requests sent 100 ms apart, each answered 429 after 5 ms. They are
// offered and completed but measured no TTFT, TPOT or E2EL, so the table
// prints "-" for every latency (not 0.0ms, no request's latency), the
// JSON holds no percentile and the pass rule reads none; the counts stay
// the hand count: 10 completed over the 0.905 s from the first send to
// the last answer, none accepted.
func TestPrintTableNotMeasured(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	run := &openloop.Run{Start: t0, Timeout: time.Second, Span: 900 * time.Millisecond}
	for i := range 10 {
		at := t0.Add(time.Duration(i) * 100 * time.Millisecond)
		run.Results = append(run.Results, &probe.Result{Seq: uint64(i + 1), Scheduled: at, Sent: at,
			Disposition: probe.ServerFailure, Reason: probe.ReasonHTTP429, HTTPStatus: 429})
		run.Ended = append(run.Ended, at.Add(5*time.Millisecond))
	}
	run.End = run.Ended[9]
	m := stats.Compute(run, stats.Options{Percentiles: []float64{50, 99}})
	if m.ServerCompleted != 10 || m.Acceptance != 0 || math.Abs(m.CompletedThroughput-10/0.905) > 1e-9 {
		t.Fatalf("completed %d acceptance %v completed/s %v, want 10, 0 and 10/0.905", m.ServerCompleted, m.Acceptance, m.CompletedThroughput)
	}
	for _, name := range []string{stats.MetricTTFT, stats.MetricTPOT, stats.MetricE2EL} {
		if v := m.LatencyPercentile(name, 99); !math.IsNaN(v) {
			t.Errorf("p99 %s = %vms, want none: no request measured it", name, v)
		}
	}
	s := &Search{Repeats: []Repeat{{Rate: 10, Metrics: m}}}
	var buf bytes.Buffer
	PrintTable(&buf, s, PassRule{Percentile: 99})
	row := strings.Fields(strings.Split(buf.String(), "\n")[1])
	// offered/s repeat offered sent sent/s completed/s goodput/s acceptance
	// prompt output unfinished timeouts, then the six latency columns.
	if got := strings.Join(row[12:18], " "); got != "- - - - - -" {
		t.Errorf("latency columns %q, want \"- - - - - -\":\n%s", got, buf.String())
	}
	b, err := Marshal(s, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{`"ttft_ms": {}`, `"tpot_ms": {}`, `"e2el_ms": {}`} {
		if !strings.Contains(string(b), key) {
			t.Errorf("JSON lacks %s:\n%s", key, b)
		}
	}
}

// TestRepeatJSONSteadyThirds: the saved thirds are named by the latency
// the steady check compared: TTFT's keys for a generation probe, E2EL's
// for an embeddings probe (its TTFT keys stay 0, as when not judged).
func TestRepeatJSONSteadyThirds(t *testing.T) {
	gen := newRepeatJSON(Repeat{Metrics: stats.Metrics{SteadyMetric: stats.MetricTTFT, SteadyFirstThird: 3, SteadyLastThird: 200}})
	if gen.TTFTFirstThirdMS != 3 || gen.TTFTLastThirdMS != 200 || gen.E2ELFirstThirdMS != 0 || gen.E2ELLastThirdMS != 0 {
		t.Errorf("generation probe: %+v, want the TTFT thirds 3 and 200 only", gen)
	}
	emb := newRepeatJSON(Repeat{Metrics: stats.Metrics{SteadyMetric: stats.MetricE2EL, SteadyFirstThird: 20, SteadyLastThird: 400}})
	if emb.E2ELFirstThirdMS != 20 || emb.E2ELLastThirdMS != 400 || emb.TTFTFirstThirdMS != 0 || emb.TTFTLastThirdMS != 0 {
		t.Errorf("embeddings probe: %+v, want the E2EL thirds 20 and 400 only", emb)
	}
}
