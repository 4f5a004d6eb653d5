package collector

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"

	"github.com/vllm-prober/vllm-prober/collector/metricname"
	"github.com/vllm-prober/vllm-prober/config"
	"github.com/vllm-prober/vllm-prober/internal/promtext"
	"github.com/vllm-prober/vllm-prober/probe"
)

// finish reports one offered and finished result to c.
func finish(c *Collector, r *probe.Result) {
	c.Offered(config.PairKey{Target: r.Target, Probe: r.Probe})
	c.Finished(r)
}

func TestCollectorPreInitialisesCounters(t *testing.T) {
	c := New(Options{Now: clock})
	syncPairs(c, testConfig(map[string][]string{"t1": {"chat"}}, map[string]config.SLO{"chat": {}, "other": {}}))
	var want strings.Builder
	writeZeros(&want, "vllm_probe_requests_total", metricname.RequestsHelp, `{disposition=%q,probe="chat",replica="",target="t1"}`, probe.Dispositions)
	writeZeros(&want, "vllm_probe_failures_total", metricname.FailuresHelp, `{probe="chat",reason=%q,replica="",target="t1"}`, probe.Reasons)
	writeZeros(&want, "vllm_probe_slo_violations_total", metricname.SLOViolationsHelp, `{probe="chat",replica="",slo=%q,target="t1"}`, probe.SLOs)
	writeZeros(&want, "vllm_probe_quality_failures_total", metricname.QualityFailuresHelp, `{check=%q,probe="chat",replica="",target="t1"}`, probe.Checks)
	want.WriteString(lines(
		"# HELP vllm_probe_requests_offered_total "+metricname.RequestsOfferedHelp,
		"# TYPE vllm_probe_requests_offered_total counter",
		`vllm_probe_requests_offered_total{probe="chat",replica="",target="t1"} 0`,
		"# HELP vllm_probe_requests_in_flight "+metricname.RequestsInFlightHelp,
		"# TYPE vllm_probe_requests_in_flight gauge",
		`vllm_probe_requests_in_flight{probe="chat",replica="",target="t1"} 0`,
		"# HELP vllm_probe_prompt_tokens_total "+metricname.PromptTokensHelp,
		"# TYPE vllm_probe_prompt_tokens_total counter",
		`vllm_probe_prompt_tokens_total{probe="chat",replica="",target="t1"} 0`,
	))
	if err := testutil.CollectAndCompare(c, strings.NewReader(want.String()),
		metricname.Requests, metricname.Failures, metricname.SLOViolations, metricname.QualityFailures, metricname.RequestsOffered, metricname.RequestsInFlight, metricname.PromptTokens); err != nil {
		t.Error(err)
	}
	// 6 + 18 + 4 + 9 counters, offered, in flight, 3 token counters and 14
	// histograms for the one configured pair; "other" is not run by t1.
	if got, want := testutil.CollectAndCount(c), len(probe.Dispositions)+len(probe.Reasons)+len(probe.SLOs)+len(probe.Checks)+5+8+len(probe.Phases); got != want {
		t.Errorf("series: got %d, want %d", got, want)
	}
}

func TestCollectorCountsResults(t *testing.T) {
	results := []*probe.Result{
		{Disposition: probe.Accepted, PromptTokens: 10, OutputTokens: 5, ReasoningTokens: 3},
		{Disposition: probe.LatencyFailure, Reason: probe.ReasonLatency, SLOViolations: []string{probe.SLOTTFT, probe.SLOE2EL, probe.SLOTTFA}, PromptTokens: 10, OutputTokens: 7, ReasoningTokens: 4},
		{Disposition: probe.QualityFailure, Reason: probe.ReasonQuality, QualityFailures: []string{probe.CheckRegex, probe.CheckFinishReason}, SLOViolations: []string{probe.SLOTTFT}},
		{Disposition: probe.Cancelled, Reason: probe.ReasonInFlightCap},
		{Disposition: probe.ServerFailure, Reason: probe.ReasonHTTP5xx},
		{Disposition: "bogus", Reason: "bogus"}, // not counted, never a panic
	}
	tests := []struct {
		name, metric, want string
	}{
		{"dispositions", metricname.Requests, family("vllm_probe_requests_total", metricname.RequestsHelp, "counter",
			`vllm_probe_requests_total{disposition="accepted",probe="p",replica="",target="t"} 1`,
			`vllm_probe_requests_total{disposition="cancelled",probe="p",replica="",target="t"} 1`,
			`vllm_probe_requests_total{disposition="client_timeout",probe="p",replica="",target="t"} 0`,
			`vllm_probe_requests_total{disposition="latency_failure",probe="p",replica="",target="t"} 1`,
			`vllm_probe_requests_total{disposition="quality_failure",probe="p",replica="",target="t"} 1`,
			`vllm_probe_requests_total{disposition="server_failure",probe="p",replica="",target="t"} 1`)},
		{"offered counts every request, in flight returns to 0", metricname.RequestsOffered, family("vllm_probe_requests_offered_total", metricname.RequestsOfferedHelp, "counter",
			`vllm_probe_requests_offered_total{probe="p",replica="",target="t"} 6`)},
		{"in flight", metricname.RequestsInFlight, family("vllm_probe_requests_in_flight", metricname.RequestsInFlightHelp, "gauge",
			`vllm_probe_requests_in_flight{probe="p",replica="",target="t"} 0`)},
		{"slo violations", metricname.SLOViolations, family("vllm_probe_slo_violations_total", metricname.SLOViolationsHelp, "counter",
			`vllm_probe_slo_violations_total{probe="p",replica="",slo="e2el",target="t"} 1`,
			`vllm_probe_slo_violations_total{probe="p",replica="",slo="tpot",target="t"} 0`,
			`vllm_probe_slo_violations_total{probe="p",replica="",slo="ttfa",target="t"} 1`,
			`vllm_probe_slo_violations_total{probe="p",replica="",slo="ttft",target="t"} 2`)},
		{"reasoning tokens", metricname.ReasoningTokens, family("vllm_probe_reasoning_tokens_total", metricname.ReasoningTokensHelp, "counter",
			`vllm_probe_reasoning_tokens_total{probe="p",replica="",target="t"} 7`)},
		{"output tokens", metricname.OutputTokens, family("vllm_probe_output_tokens_total", metricname.OutputTokensHelp, "counter",
			`vllm_probe_output_tokens_total{probe="p",replica="",target="t"} 12`)},
	}
	c := New(Options{Now: clock})
	syncPairs(c, testConfig(map[string][]string{"t": nil}, map[string]config.SLO{"p": {}}))
	for _, r := range results {
		r.Target, r.Probe = "t", "p"
		finish(c, r)
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := testutil.CollectAndCompare(c, strings.NewReader(tc.want), tc.metric); err != nil {
				t.Error(err)
			}
		})
	}
	t.Run("failures by reason", func(t *testing.T) {
		for reason, want := range map[string]float64{probe.ReasonLatency: 1, probe.ReasonQuality: 1, probe.ReasonInFlightCap: 1, probe.ReasonHTTP5xx: 1, probe.ReasonTimeout: 0} {
			if got := promtext.CounterValue(t, c, metricname.Failures, "reason", reason); got != want {
				t.Errorf("reason %s: got %v, want %v", reason, got, want)
			}
		}
	})
	t.Run("quality failures by check", func(t *testing.T) {
		for check, want := range map[string]float64{probe.CheckRegex: 1, probe.CheckFinishReason: 1, probe.CheckJSON: 0} {
			if got := promtext.CounterValue(t, c, metricname.QualityFailures, "check", check); got != want {
				t.Errorf("check %s: got %v, want %v", check, got, want)
			}
		}
	})
}

// writeZeros writes the HELP and TYPE lines of counter name and a zero
// sample for each value, labelled by labels with %q for the value.
func writeZeros[V ~string](w *strings.Builder, name, help, labels string, values []V) {
	w.WriteString(family(name, help, "counter"))
	for _, v := range values {
		fmt.Fprintf(w, name+labels+" 0\n", v)
	}
}

// family returns the exposition text of metric family name: its HELP and
// TYPE lines, then samples, one a line.
func family(name, help, typ string, samples ...string) string {
	return lines(append([]string{"# HELP " + name + " " + help, "# TYPE " + name + " " + typ}, samples...)...)
}

func upperBounds(h *dto.Histogram) []float64 {
	var out []float64
	for _, b := range h.GetBucket() {
		out = append(out, b.GetUpperBound())
	}
	return out
}

func TestCollectorHistogramBuckets(t *testing.T) {
	slo := config.SLO{TTFT: dur("300ms"), TPOT: dur("33ms"), E2EL: dur("20s"), TTFA: dur("3s")}
	c := New(Options{Now: clock})
	syncPairs(c, testConfig(map[string][]string{"t": nil}, map[string]config.SLO{"p": slo}))
	mfs := promtext.Gather(t, c)
	tests := []struct {
		name   string
		metric string
		want   []float64
	}{
		{"ttft gets the ttft threshold", metricname.TTFT, withThresholds(ttftBuckets, dur("300ms"))},
		{"ttfa gets vLLM's ttft buckets and the ttfa threshold", metricname.TTFA, withThresholds(ttftBuckets, dur("3s"))},
		{"server ttft gets the ttft threshold", metricname.ServerTTFT, withThresholds(ttftBuckets, dur("300ms"))},
		{"tpot gets the tpot threshold", metricname.TPOT, withThresholds(itlBuckets, dur("33ms"))},
		{"itl gets the tpot threshold", metricname.ITL, withThresholds(itlBuckets, dur("33ms"))},
		{"e2el threshold already a vLLM boundary", metricname.E2EL, requestLatencyBuckets},
		{"queue time uses vLLM's request latency buckets", metricname.ServerQueueTime, requestLatencyBuckets},
		{"schedule lag", metricname.ScheduleLag, fineBuckets},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := upperBounds(promtext.Series(t, mfs, tc.metric).GetHistogram())
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("buckets\n got %v\nwant %v", got, tc.want)
			}
		})
	}
	t.Run("threshold inserted in order", func(t *testing.T) {
		got := withThresholds([]float64{0.1, 0.5}, dur("300ms"), dur("500ms"), 0)
		if fmt.Sprint(got) != "[0.1 0.3 0.5]" {
			t.Errorf("got %v", got)
		}
	})
}

func TestCollectorObservations(t *testing.T) {
	c := New(Options{Now: clock})
	syncPairs(c, testConfig(map[string][]string{"t": nil}, map[string]config.SLO{"p": {TTFT: dur("300ms")}}))
	sent := fixedNow
	finish(c, &probe.Result{
		Target: "t", Probe: "p", RequestID: "req-1", Disposition: probe.LatencyFailure, Reason: probe.ReasonLatency,
		Sent: sent, Lag: 2 * time.Millisecond, TTFT: 400 * time.Millisecond, TTFA: 700 * time.Millisecond, TPOT: 20 * time.Millisecond, E2EL: time.Second,
		ITLs:   []time.Duration{10 * time.Millisecond, 30 * time.Millisecond, 0},
		Phases: probe.PhaseTimes{probe.PhaseHeaders: 5 * time.Millisecond, probe.PhaseDecode: 600 * time.Millisecond},
		Server: &probe.ServerTiming{QueueTime: 0, TTFT: 350 * time.Millisecond},
	})
	finish(c, &probe.Result{ // cut stream: TTFT and ITL count, E2EL/TPOT/decode do not
		Target: "t", Probe: "p", RequestID: "req-2", Disposition: probe.ServerFailure, Reason: probe.ReasonDisconnect,
		Sent: sent, TTFT: 100 * time.Millisecond, TPOT: time.Millisecond, E2EL: 150 * time.Millisecond,
		ITLs: []time.Duration{50 * time.Millisecond}, Phases: probe.PhaseTimes{probe.PhaseDecode: 50 * time.Millisecond},
	})
	finish(c, &probe.Result{Target: "t", Probe: "p", Disposition: probe.Cancelled, Reason: probe.ReasonInFlightCap}) // never sent
	finish(c, &probe.Result{                                                                                         // reasoning only, then timed out: TTFA censored at the timeout
		Target: "t", Probe: "p", Disposition: probe.ClientTimeout, Reason: probe.ReasonTimeout,
		Sent: sent, TTFT: 200 * time.Millisecond, Elapsed: 2 * time.Second,
	})
	finish(c, &probe.Result{ // reasoning only, finished: no answer time to observe
		Target: "t", Probe: "p", Disposition: probe.Accepted,
		Sent: sent, TTFT: 200 * time.Millisecond, E2EL: 300 * time.Millisecond,
		Server: &probe.ServerTiming{QueueTime: -1, TTFT: 50 * time.Millisecond}, // no queue time sent: none observed
	})
	mfs := promtext.Gather(t, c)
	tests := []struct {
		metric string
		match  []string
		count  uint64
		sum    float64
	}{
		{metricname.TTFT, nil, 4, 0.9},
		{metricname.TTFA, nil, 2, 2.7},
		{metricname.ITL, nil, 4, 0.09},
		{metricname.TPOT, nil, 1, 0.02},
		{metricname.E2EL, nil, 3, 3.3},
		{metricname.ScheduleLag, nil, 4, 0.002},
		{metricname.HTTPPhase, []string{"phase", "headers"}, 1, 0.005},
		{metricname.HTTPPhase, []string{"phase", "decode"}, 1, 0.6},
		{metricname.HTTPPhase, []string{"phase", "dns"}, 0, 0},
		{metricname.ServerTTFT, nil, 2, 0.4},
		{metricname.ServerQueueTime, nil, 1, 0},
	}
	for _, tc := range tests {
		t.Run(tc.metric+fmt.Sprint(tc.match), func(t *testing.T) {
			h := promtext.Series(t, mfs, tc.metric, tc.match...).GetHistogram()
			if h.GetSampleCount() != tc.count || fmt.Sprintf("%.6f", h.GetSampleSum()) != fmt.Sprintf("%.6f", tc.sum) {
				t.Errorf("count %d sum %v, want %d %v", h.GetSampleCount(), h.GetSampleSum(), tc.count, tc.sum)
			}
		})
	}
	t.Run("native histogram alongside classic buckets", func(t *testing.T) {
		h := promtext.Series(t, mfs, metricname.TTFT).GetHistogram()
		if h.Schema == nil || len(h.GetPositiveSpan()) == 0 || len(h.GetBucket()) == 0 {
			t.Errorf("want native schema, spans and classic buckets, got schema=%v spans=%d buckets=%d", h.Schema, len(h.GetPositiveSpan()), len(h.GetBucket()))
		}
	})
	t.Run("exemplar carries the request id", func(t *testing.T) {
		var ids []string
		for _, b := range promtext.Series(t, mfs, metricname.TTFT).GetHistogram().GetBucket() {
			for _, lp := range b.GetExemplar().GetLabel() {
				ids = append(ids, lp.GetName()+"="+lp.GetValue())
			}
		}
		if fmt.Sprint(ids) != "[request_id=req-2 request_id=req-1]" {
			t.Errorf("exemplars %v", ids)
		}
	})
}

func TestExemplarLimits(t *testing.T) {
	tests := []struct {
		name, id, want string
	}{
		{"empty id has no exemplar", "", ""},
		{"short id kept", "chatcmpl-1", "chatcmpl-1"},
		{"long id cut to the OpenMetrics limit", strings.Repeat("x", 300), strings.Repeat("x", 118)},
		{"invalid utf-8 replaced", "a\xffb", "a?b"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := exemplar(tc.id)[labelRequestID]; got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
			h := newHistogram(config.PairKey{Target: "t", Probe: "p"}, metricname.TTFT, metricname.TTFTHelp, ttftBuckets)
			observe(h, time.Second, exemplar(tc.id)) // must not panic
		})
	}
}

// TestNativeExemplarsKeepTheTail: a native histogram keeps at most
// nativeMaxExemplars exemplars; of 2 minutes of requests at 0.05 req/s
// (the longest scrape interval) with one slow request among them, the slow
// one's and the newest request's ids are still exposed.
func TestNativeExemplarsKeepTheTail(t *testing.T) {
	h := newHistogram(config.PairKey{Target: "t", Probe: "p"}, metricname.TTFT, metricname.TTFTHelp, nil)
	for i := range 6 {
		d := time.Duration(100+i) * time.Millisecond
		if i == 2 {
			d = 8 * time.Second
		}
		observe(h, d, exemplar(fmt.Sprintf("req-%d", i)))
	}
	var m dto.Metric
	if err := h.Write(&m); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, e := range m.GetHistogram().GetExemplars() {
		ids = append(ids, e.GetLabel()[0].GetValue())
	}
	if len(ids) > nativeMaxExemplars || !slices.Contains(ids, "req-2") || !slices.Contains(ids, "req-5") {
		t.Errorf("exemplars %v, want at most %d with req-2 (slow) and req-5 (newest)", ids, nativeMaxExemplars)
	}
	if len(ids) != 4 {
		t.Errorf("%d exemplars %v, want 4", len(ids), ids)
	}
}

func TestCollectorPairChanges(t *testing.T) {
	slow, fast := config.SLO{TTFT: dur("1200ms")}, config.SLO{TTFT: dur("700ms")}
	c := New(Options{Now: clock})
	syncPairs(c, testConfig(map[string][]string{"t1": nil}, map[string]config.SLO{"keep": slow, "change": fast, "drop": slow}))
	for _, p := range []string{"keep", "change", "drop"} {
		finish(c, &probe.Result{Target: "t1", Probe: p, Disposition: probe.Accepted, TTFT: time.Second / 2})
	}
	// keep keeps its SLO, change takes another one.
	syncPairs(c, testConfig(map[string][]string{"t1": {"keep", "change"}, "t2": {"keep"}}, map[string]config.SLO{"keep": slow, "change": slow, "drop": slow}))
	finish(c, &probe.Result{Target: "t1", Probe: "drop", Disposition: probe.Accepted}) // removed pair: ignored

	want := family("vllm_probe_requests_offered_total", metricname.RequestsOfferedHelp, "counter",
		`vllm_probe_requests_offered_total{probe="change",replica="",target="t1"} 1`,
		`vllm_probe_requests_offered_total{probe="keep",replica="",target="t1"} 1`,
		`vllm_probe_requests_offered_total{probe="keep",replica="",target="t2"} 0`,
	)
	if err := testutil.CollectAndCompare(c, strings.NewReader(want), metricname.RequestsOffered); err != nil {
		t.Error(err)
	}
	// checkTTFT checks a pair's TTFT count and that its buckets have the
	// bound and not the other.
	checkTTFT := func(t *testing.T, mfs map[string]*dto.MetricFamily, target, probe string, count uint64, bound, other float64) {
		t.Helper()
		h := promtext.Series(t, mfs, metricname.TTFT, "target", target, "probe", probe).GetHistogram()
		if h.GetSampleCount() != count {
			t.Errorf("count %d, want %d", h.GetSampleCount(), count)
		}
		if !slices.Contains(upperBounds(h), bound) || slices.Contains(upperBounds(h), other) {
			t.Errorf("buckets %v: want %v and not %v", upperBounds(h), bound, other)
		}
	}
	mfs := promtext.Gather(t, c)
	t.Run("same thresholds keep histograms", func(t *testing.T) {
		checkTTFT(t, mfs, "t1", "keep", 1, 1.2, 0.7)
	})
	t.Run("a changed threshold gives new buckets", func(t *testing.T) {
		checkTTFT(t, mfs, "t1", "change", 0, 1.2, 0.7)
	})
	t.Run("new pair starts empty with its probe's threshold", func(t *testing.T) {
		checkTTFT(t, mfs, "t2", "keep", 0, 1.2, 0.7)
	})
	syncPairs(c, testConfig(map[string][]string{"t1": {"keep"}}, map[string]config.SLO{"keep": {TTFT: dur("300ms")}}))
	t.Run("only the probe's own threshold", func(t *testing.T) {
		checkTTFT(t, promtext.Gather(t, c), "t1", "keep", 0, 0.3, 1.2)
	})
}

func TestCollectorConcurrentUse(t *testing.T) {
	c := New(Options{Now: clock})
	cfg := testConfig(map[string][]string{"t": nil}, map[string]config.SLO{"p": {}})
	syncPairs(c, cfg)
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 200 {
				finish(c, &probe.Result{Target: "t", Probe: "p", RequestID: "r", Disposition: probe.Accepted, TTFT: time.Millisecond, ITLs: []time.Duration{time.Millisecond}})
			}
		})
	}
	wg.Go(func() {
		for range 20 {
			if _, err := reg.Gather(); err != nil {
				t.Error(err)
			}
			syncPairs(c, cfg)
		}
	})
	wg.Wait()
	if got := promtext.CounterValue(t, c, metricname.Requests, "disposition", "accepted"); got != 800 {
		t.Errorf("accepted %v, want 800", got)
	}
}

// TestCollectorReplicaLabel: a fleet's gateway and replica pairs are
// separate series told apart by replica ("" for the gateway), and a
// result counts only in its own replica's series.
func TestCollectorReplicaLabel(t *testing.T) {
	c := New(Options{Now: clock})
	gw := config.PairKey{Target: "fleet", Probe: "chat"}
	rep := config.PairKey{Target: "fleet", Probe: "chat", Replica: "10.0.0.1:8000"}
	for _, k := range []config.PairKey{gw, rep} {
		c.PairStarted(config.Pair{Key: k, Probe: config.Probe{Name: k.Probe, Histograms: config.LeanHistograms}})
	}
	c.Offered(rep)
	c.Offered(rep)
	c.Finished(&probe.Result{Target: rep.Target, Probe: rep.Probe, Replica: rep.Replica, Disposition: probe.Accepted})
	want := lines(
		"# HELP vllm_probe_requests_offered_total "+metricname.RequestsOfferedHelp,
		"# TYPE vllm_probe_requests_offered_total counter",
		`vllm_probe_requests_offered_total{probe="chat",replica="",target="fleet"} 0`,
		`vllm_probe_requests_offered_total{probe="chat",replica="10.0.0.1:8000",target="fleet"} 2`,
		"# HELP vllm_probe_requests_in_flight "+metricname.RequestsInFlightHelp,
		"# TYPE vllm_probe_requests_in_flight gauge",
		`vllm_probe_requests_in_flight{probe="chat",replica="",target="fleet"} 0`,
		`vllm_probe_requests_in_flight{probe="chat",replica="10.0.0.1:8000",target="fleet"} 1`,
	)
	if err := testutil.CollectAndCompare(c, strings.NewReader(want), metricname.RequestsOffered, metricname.RequestsInFlight); err != nil {
		t.Error(err)
	}
	c.PairStopped(rep)
	if n := testutil.CollectAndCount(c, metricname.RequestsOffered); n != 1 {
		t.Errorf("%d offered series after the replica stopped, want the gateway's", n)
	}
}
