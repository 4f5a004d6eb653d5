package stats

import (
	"math"
	"testing"
	"time"

	"github.com/vllm-prober/vllm-prober/bench/openloop"
	"github.com/vllm-prober/vllm-prober/bench/pyfmt"
	"github.com/vllm-prober/vllm-prober/probe"
)

// handRun builds a run from (disposition, reason, count) groups: request i
// is sent at i x gap from t0 and ends after took, except requests never
// sent (in_flight_cap), which end when their time came.
type group struct {
	d      probe.Disposition
	reason string
	n      int
}

func handRun(t0 time.Time, gap, took time.Duration, groups ...group) *openloop.Run {
	run := &openloop.Run{Start: t0}
	for _, g := range groups {
		for range g.n {
			at := t0.Add(time.Duration(len(run.Results)) * gap)
			r := &probe.Result{Seq: uint64(len(run.Results) + 1), Scheduled: at, Disposition: g.d, Reason: g.reason}
			end := at
			if g.reason != probe.ReasonInFlightCap {
				r.Sent, end = at, at.Add(took)
			}
			if Completed(r) {
				r.TTFT, r.E2EL, r.OutputTokens = took/2, took, 1
			}
			run.Results, run.Ended = append(run.Results, r), append(run.Ended, end)
		}
	}
	run.End = run.Ended[len(run.Ended)-1]
	run.Span = run.Results[len(run.Results)-1].Scheduled.Sub(t0)
	return run
}

// TestComputeWorkedExample is the goodput methodology's worked example at
// one hundredth of its size: 720 requests offered over 6 s, 24 complete
// late, 6 fail quality, 3 are server errors (answered, so completed), 3 are
// unfinished. Completed = 717, accepted = 684: completed throughput 119.5/s,
// goodput 114/s, acceptance 95%.
func TestComputeWorkedExample(t *testing.T) {
	gap := 6 * time.Second / 720
	run := handRun(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), gap, gap, // the last answer comes 6 s after the first send
		group{probe.LatencyFailure, probe.ReasonLatency, 24}, group{probe.QualityFailure, probe.ReasonQuality, 6},
		group{probe.ServerFailure, probe.ReasonHTTP5xx, 3}, group{probe.Unfinished, "", 3}, group{probe.Accepted, "", 684})
	m := Compute(run, Options{Percentiles: []float64{99}})
	checks := []struct {
		name      string
		got, want float64
	}{
		{"offered", float64(m.Offered), 720},
		{"completed", float64(m.ServerCompleted), 717},
		{"wall clock", m.Window.Seconds(), 6},
		{"completed throughput", m.CompletedThroughput, 119.5},
		{"goodput", m.Goodput, 114},
		{"acceptance", m.Acceptance, 0.95},
	}
	for _, c := range checks {
		t.Run(c.name, func(t *testing.T) {
			if math.Abs(c.got-c.want) > 1e-6*c.want { // 6s/720 is rounded to the nanosecond
				t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
			}
		})
	}
}

// TestComputeAccounting pins who is offered, completed and accepted.
func TestComputeAccounting(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name                    string
		groups                  []group
		completed, acceptDenom  int
		completedRate, goodRate float64 // per second of the 1 s window (10 sends 100 ms apart, 100 ms each)
	}{
		{"in-flight-cap shedding stays offered",
			[]group{{probe.Accepted, "", 8}, {probe.Cancelled, probe.ReasonInFlightCap, 2}}, 8, 10, 8 / 0.8, 8 / 0.8},
		{"shutdown and removal leave the denominator",
			[]group{{probe.Accepted, "", 8}, {probe.Cancelled, probe.ReasonShutdown, 1}, {probe.Cancelled, probe.ReasonRemoved, 1}}, 8, 8, 8, 8},
		{"timeouts, disconnects and unfinished are offered, not completed",
			[]group{{probe.Accepted, "", 6}, {probe.ClientTimeout, probe.ReasonTimeout, 2}, {probe.ServerFailure, probe.ReasonDisconnect, 1},
				{probe.Unfinished, "", 1}}, 6, 10, 6, 6},
		{"answered failures are completed",
			[]group{{probe.Accepted, "", 4}, {probe.ServerFailure, probe.ReasonHTTP429, 1}, {probe.ServerFailure, probe.ReasonStreamError, 1},
				{probe.ServerFailure, probe.ReasonNoDone, 1}, {probe.ServerFailure, probe.ReasonProtocol, 1}, {probe.ServerFailure, probe.ReasonHTTP4xx, 1},
				{probe.ServerFailure, probe.ReasonConnect, 1}}, 9, 10, 9, 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			run := handRun(t0, 100*time.Millisecond, 100*time.Millisecond, tt.groups...)
			m := Compute(run, Options{Percentiles: []float64{50}})
			accepted := m.Dispositions[probe.Accepted]
			if m.Offered != 10 || m.ServerCompleted != tt.completed || m.Acceptance != float64(accepted)/float64(tt.acceptDenom) {
				t.Errorf("offered %d completed %d acceptance %v, want 10, %d and %d/%d", m.Offered, m.ServerCompleted, m.Acceptance,
					tt.completed, accepted, tt.acceptDenom)
			}
			if math.Abs(m.CompletedThroughput-tt.completedRate) > 1e-9 || math.Abs(m.Goodput-tt.goodRate) > 1e-9 {
				t.Errorf("completed %v/s goodput %v/s over %v, want %v and %v", m.CompletedThroughput, m.Goodput, m.Window,
					tt.completedRate, tt.goodRate)
			}
		})
	}
}

// TestComputeCensored checks that a client timeout, sent or not, counts at
// the timeout and an unfinished request at the time it was cut, in every
// latency.
func TestComputeCensored(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	msd := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	run := &openloop.Run{Start: t0, Timeout: msd(1000), Results: []*probe.Result{
		{Sent: t0, Disposition: probe.Accepted, TTFT: msd(10), E2EL: msd(40), TPOT: msd(10), OutputTokens: 4},
		// Timed out before its first token.
		{Sent: t0, Disposition: probe.ClientTimeout, Reason: probe.ReasonTimeout},
		// Timed out mid-stream after 3 tokens: TTFT as measured, E2EL at
		// the timeout, TPOT = (1000-100)/(3-1).
		{Sent: t0, Disposition: probe.ClientTimeout, Reason: probe.ReasonTimeout, TTFT: msd(100), E2EL: msd(300), OutputTokens: 3},
		// Cut by the end of the run 700 ms after its send.
		{Sent: t0.Add(msd(100)), Disposition: probe.Unfinished},
		// A failure has no latency of a completed response.
		{Sent: t0, Disposition: probe.ServerFailure, Reason: probe.ReasonHTTP5xx},
		// Timed out before its send, the model discovery unanswered: it
		// counts at the timeout too.
		{Disposition: probe.ClientTimeout, Reason: probe.ReasonTimeout, Elapsed: msd(1000)},
	}, Ended: []time.Time{t0.Add(msd(40)), t0.Add(msd(1001)), t0.Add(msd(1002)), t0.Add(msd(800)), t0.Add(msd(5)), t0.Add(msd(999))}}
	m := Compute(run, Options{Percentiles: []float64{100}})
	tests := []struct {
		metric string
		want   []float64 // sorted samples
	}{
		{MetricTTFT, []float64{10, 100, 700, 1000, 1000}},
		{MetricE2EL, []float64{40, 700, 1000, 1000, 1000}},
		{MetricTPOT, []float64{10, 450}},
	}
	for _, tt := range tests {
		t.Run(tt.metric, func(t *testing.T) {
			d := m.Latency[tt.metric]
			mean := 0.0
			for _, v := range tt.want {
				mean += v
			}
			mean /= float64(len(tt.want))
			if d.Percentiles[0].MS != tt.want[len(tt.want)-1] || math.Abs(d.Mean-mean) > 1e-9 {
				t.Errorf("max %v mean %v, want %v and %v (samples %v)", d.Percentiles[0].MS, d.Mean, tt.want[len(tt.want)-1], mean, tt.want)
			}
		})
	}
	if v := m.Dists[MetricE2EL]; v.Mean != 40 {
		t.Errorf("vLLM's E2EL mean %v, want 40: its block keeps completed requests only", v.Mean)
	}
	if m.Timeouts != 3 || m.Window != msd(1002) {
		t.Errorf("timeouts %d window %v, want 3 and 1.002s", m.Timeouts, m.Window)
	}
}

// TestComputeThirds checks the medians of the TTFT thirds, in planned
// order, with a timeout counted at the timeout.
func TestComputeThirds(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	run := &openloop.Run{Start: t0, Timeout: time.Second}
	for i, ttft := range []int{5, 1, 3, 50, 60, 70, 200, 0, 100} { // 0: timed out before its first token
		r := &probe.Result{Seq: uint64(i + 1), Sent: t0, Disposition: probe.Accepted, TTFT: time.Duration(ttft) * time.Millisecond,
			E2EL: time.Second, OutputTokens: 1}
		if ttft == 0 {
			r.Disposition, r.Reason, r.E2EL = probe.ClientTimeout, probe.ReasonTimeout, 0
		}
		run.Results, run.Ended = append(run.Results, r), append(run.Ended, t0.Add(time.Second))
	}
	m := Compute(run, Options{Percentiles: []float64{50}})
	if m.SteadyFirstThird != 3 || m.SteadyLastThird != 200 {
		t.Errorf("thirds %v, %v; want 3 and 200 (median of 200, 1000, 100)", m.SteadyFirstThird, m.SteadyLastThird)
	}
}

// TestComputeThirdsEmbeddings: an embeddings probe has no TTFT, so its
// steady-state check compares its censored E2EL instead, the time to its
// one answer. Nine requests, the eighth timed out (counted at the 1 s
// timeout): the first third's median is 20 ms, the last third's that of
// 300, 1000 and 400 ms, 400 ms.
func TestComputeThirdsEmbeddings(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	run := &openloop.Run{Start: t0, Timeout: time.Second}
	for i, e2el := range []int{10, 30, 20, 40, 50, 60, 300, 0, 400} { // 0: timed out
		r := &probe.Result{Seq: uint64(i + 1), Sent: t0, Embeddings: true, Disposition: probe.Accepted,
			E2EL: time.Duration(e2el) * time.Millisecond, PromptTokens: 8}
		end := t0.Add(r.E2EL)
		if e2el == 0 {
			r.Disposition, r.Reason, end = probe.ClientTimeout, probe.ReasonTimeout, t0.Add(1001*time.Millisecond)
		}
		run.Results, run.Ended = append(run.Results, r), append(run.Ended, end)
	}
	m := Compute(run, Options{Percentiles: []float64{50}})
	if m.SteadyMetric != MetricE2EL || m.SteadyFirstThird != 20 || m.SteadyLastThird != 400 {
		t.Errorf("steady %s thirds %v, %v; want e2el 20 and 400", m.SteadyMetric, m.SteadyFirstThird, m.SteadyLastThird)
	}
	var chat openloop.Run
	chat.Results = []*probe.Result{{Seq: 1, Sent: t0, Disposition: probe.Accepted, TTFT: time.Millisecond, E2EL: time.Millisecond}}
	chat.Ended = []time.Time{t0.Add(time.Millisecond)}
	if got := Compute(&chat, Options{}).SteadyMetric; got != MetricTTFT {
		t.Errorf("steady metric of a chat run %q, want ttft", got)
	}
}

func TestQuantileMatchesNumpy(t *testing.T) {
	xs := []float64{1, 2, 3, 4}
	tests := []struct {
		p, want float64
	}{{50, 2.5}, {99, 3.97}, {100, 4}, {25, 1.75}}
	for _, tt := range tests {
		t.Run(pyfmt.Percentile(tt.p), func(t *testing.T) {
			if got := distOf(xs, []float64{tt.p}).Percentiles[0].MS; math.Abs(got-tt.want) > 1e-12 {
				t.Errorf("p%v = %v, want %v (numpy linear)", tt.p, got, tt.want)
			}
		})
	}
	if d := distOf(xs, nil); math.Abs(d.Std-1.118033988749895) > 1e-12 || d.Mean != 2.5 {
		t.Errorf("dist = %+v, want numpy's population std 1.1180", d)
	}
}

// TestComputeCensoredEmbeddings: an embeddings request generates no token,
// so it has no TTFT or TPOT, and a client timeout of one is censored into
// E2EL only (docs/design.md, "Embeddings probes"). Three answers after 10,
// 20 and 30 ms and one timeout at 1 s: E2EL is {10, 20, 30, 1000} ms, TTFT
// and TPOT are not measured (not 0 ms, not the timeout).
func TestComputeCensoredEmbeddings(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	msd := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	run := &openloop.Run{Start: t0, Timeout: msd(1000)}
	for i, e2el := range []int{10, 20, 30, 0} {
		r := &probe.Result{Seq: uint64(i + 1), Sent: t0, Embeddings: true, Disposition: probe.Accepted, E2EL: msd(e2el), PromptTokens: 8}
		end := t0.Add(msd(e2el))
		if e2el == 0 {
			r.Disposition, r.Reason, end = probe.ClientTimeout, probe.ReasonTimeout, t0.Add(msd(1001))
		}
		run.Results, run.Ended = append(run.Results, r), append(run.Ended, end)
	}
	run.End = run.Ended[3]
	m := Compute(run, Options{Percentiles: []float64{100}})
	if d := m.Latency[MetricE2EL]; d.Percentiles[0].MS != 1000 || math.Abs(d.Mean-265) > 1e-9 {
		t.Errorf("E2EL max %v mean %v, want 1000 and 265 (samples 10, 20, 30, 1000)", d.Percentiles[0].MS, d.Mean)
	}
	for _, name := range []string{MetricTTFT, MetricTPOT} {
		if v := m.LatencyPercentile(name, 100); !math.IsNaN(v) {
			t.Errorf("max %s = %vms, want none: an embeddings request has no token", name, v)
		}
	}
}

// TestComputeSendRateNothingSent: a run that sent nothing (interrupted
// before its first planned time, or every request given up before its
// send) achieved a send rate of 0 requests per second, not an infinite one.
func TestComputeSendRateNothingSent(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name string
		run  *openloop.Run
	}{
		{"interrupted before the first send", &openloop.Run{Start: t0, End: t0.Add(time.Second), Span: 10 * time.Second,
			Interrupted: true, Stopped: t0.Add(time.Second)}},
		{"offered, never sent", &openloop.Run{Start: t0, End: t0.Add(2 * time.Second), Span: time.Second,
			Results: []*probe.Result{{Seq: 1, Scheduled: t0.Add(time.Second), Disposition: probe.Unfinished}},
			Ended:   []time.Time{t0.Add(2 * time.Second)}, Queued: []time.Duration{0},
			Interrupted: true, Stopped: t0.Add(2 * time.Second)}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := Compute(tc.run, Options{Percentiles: []float64{99}})
			if m.Sent != 0 || m.SendRate != 0 {
				t.Errorf("sent %d, send rate %v; want 0 and 0 req/s", m.Sent, m.SendRate)
			}
		})
	}
}
