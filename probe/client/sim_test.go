package client

import (
	"context"
	"encoding/json"
	"regexp"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/common/model"

	"github.com/vllm-prober/vllm-prober/config"
	"github.com/vllm-prober/vllm-prober/internal/testfile"
	"github.com/vllm-prober/vllm-prober/probe"
	"github.com/vllm-prober/vllm-prober/probe/ledger"
	"github.com/vllm-prober/vllm-prober/simulator"
	"github.com/vllm-prober/vllm-prober/simulator/simtest"
)

// startSimulator serves the project's vLLM simulator, seeded and without
// jitter, on a loopback port until the test ends.
func startSimulator(t *testing.T, edit func(o *simulator.Options)) (*simulator.Server, string) {
	t.Helper()
	o := simulator.DefaultOptions()
	o.Seed = 1
	o.Jitter = 0
	return simtest.Start(t, o, edit)
}

func simProbe(api string) config.Probe {
	p := rqProbe(api)
	p.Timeout = model.Duration(500 * time.Millisecond)
	p.Workload.Prompts[0].Expect = config.Expect{Regex: config.Regexp{Regexp: regexp.MustCompile(`\b144\b`), Source: `\b144\b`}}
	return p
}

// TestRequesterAgainstSimulator checks that every fault the simulator
// injects ends in the right disposition and reason.
func TestRequesterAgainstSimulator(t *testing.T) {
	tests := []struct {
		name   string
		faults simulator.Faults
		want   probe.Disposition
		reason string
		checks []string
	}{
		{name: "healthy", want: probe.Accepted},
		{name: "http 500", faults: simulator.Faults{HTTP500: 1}, want: probe.ServerFailure, reason: probe.ReasonHTTP5xx},
		{name: "http 503", faults: simulator.Faults{HTTP503: 1}, want: probe.ServerFailure, reason: probe.ReasonHTTP5xx},
		{name: "http 429", faults: simulator.Faults{HTTP429: 1}, want: probe.ServerFailure, reason: probe.ReasonHTTP429},
		{name: "slow headers", faults: simulator.Faults{SlowHeaders: 1, SlowHeadersDelay: 5 * time.Second}, want: probe.ClientTimeout, reason: probe.ReasonTimeout},
		{name: "stall", faults: simulator.Faults{Stall: 1, StallDuration: 5 * time.Second}, want: probe.ClientTimeout, reason: probe.ReasonTimeout},
		{name: "disconnect", faults: simulator.Faults{Disconnect: 1}, want: probe.ServerFailure, reason: probe.ReasonDisconnect},
		{name: "error event", faults: simulator.Faults{ErrorEvent: 1}, want: probe.ServerFailure, reason: probe.ReasonStreamError},
		{name: "malformed event", faults: simulator.Faults{MalformedEvent: 1}, want: probe.ServerFailure, reason: probe.ReasonProtocol},
		{name: "no done", faults: simulator.Faults{NoDone: 1}, want: probe.ServerFailure, reason: probe.ReasonNoDone},
		{name: "wrong model", faults: simulator.Faults{WrongModel: 1}, want: probe.QualityFailure, reason: probe.ReasonQuality, checks: []string{probe.CheckModel}},
		{name: "bad answer", faults: simulator.Faults{BadAnswer: 1}, want: probe.QualityFailure, reason: probe.ReasonQuality, checks: []string{probe.CheckExpect}},
	}
	sim, simURL := startSimulator(t, nil)
	for _, api := range []string{config.APIChat, config.APICompletions} {
		tg := rqTarget(simURL)
		tg.Model = "sim-llama"
		r := newTestRequester(t, tg, simProbe(api), Options{})
		for _, tc := range tests {
			t.Run(api+"/"+tc.name, func(t *testing.T) {
				sim.SetFaults(tc.faults)
				res := doRequest(context.Background(), r, 1)
				if res.Disposition != tc.want || res.Reason != tc.reason || !slices.Equal(res.QualityFailures, tc.checks) {
					t.Fatalf("got %s/%s %v (%q), want %s/%s %v", res.Disposition, res.Reason, res.QualityFailures, res.Error,
						tc.want, tc.reason, tc.checks)
				}
			})
		}
	}
}

// TestDiscoveredModelIsChecked: with no model configured anywhere, the
// model discovered from /v1/models is the one the answer must name.
func TestDiscoveredModelIsChecked(t *testing.T) {
	sim, simURL := startSimulator(t, nil)
	tg := rqTarget(simURL)
	tg.Model = ""
	r := newTestRequester(t, tg, simProbe(config.APIChat), Options{})
	if res := doRequest(context.Background(), r, 1); res.Disposition != probe.Accepted {
		t.Fatalf("healthy: got %s/%s %q, want accepted", res.Disposition, res.Reason, res.Error)
	}
	sim.SetFaults(simulator.Faults{WrongModel: 1})
	res := doRequest(context.Background(), r, 2)
	if res.Disposition != probe.QualityFailure || !slices.Equal(res.QualityFailures, []string{probe.CheckModel}) {
		t.Fatalf("wrong model: got %s/%s %v, want quality_failure [model]", res.Disposition, res.Reason, res.QualityFailures)
	}
}

// TestRequesterAccuracy compares the client's TTFT and ITL with the
// simulator's ground truth: when each event was flushed.
func TestRequesterAccuracy(t *testing.T) {
	sim, simURL := startSimulator(t, func(o *simulator.Options) { o.Trace = true })
	tg := rqTarget(simURL)
	tg.Model = ""
	p := rqProbe(config.APICompletions)
	p.Workload = config.Workload{Random: &config.RandomWorkload{InputTokens: 64, OutputTokens: 16}}
	r := newTestRequester(t, tg, p, Options{})
	results := map[string]*probe.Result{}
	for i := range 10 {
		res := doRequest(context.Background(), r, uint64(i))
		if res.Disposition != probe.Accepted || res.OutputTokens != 16 || res.PromptTokens != 64 || res.Server == nil {
			t.Fatalf("request %d: %s/%s %q, %d/%d tokens, server %v", i, res.Disposition, res.Reason, res.Error,
				res.PromptTokens, res.OutputTokens, res.Server)
		}
		results[res.RequestID] = res
	}
	var errs []time.Duration
	for _, tr := range traced(t, sim, results) {
		res, rec := tr.res, tr.rec
		var tokens []time.Time
		for _, ev := range rec.Events {
			if ev.Tokens > 0 {
				tokens = append(tokens, ev.Time)
			}
		}
		if len(tokens) != res.Chunks || len(tokens) < 2 {
			t.Fatalf("%s: %d token events in the trace, %d measured", rec.RequestID, len(tokens), res.Chunks)
		}
		// The server stamps an event right after its flush, so the client
		// may see it a little before that stamp: compare magnitudes.
		errs = append(errs, res.Sent.Add(res.TTFT).Sub(tokens[0]).Abs())
		for i, itl := range res.ITLs {
			errs = append(errs, (itl - tokens[i+1].Sub(tokens[i])).Abs())
		}
	}
	checkTraceErrors(t, "client-server timing error", errs)
}

// TestReasoningAgainstSimulator runs a chat probe against the simulator as
// a reasoning model (--reasoning-tokens N) and compares with its trace:
// TTFT is the first reasoning event, TTFA the first answer event, so
// TTFA − TTFT is the time the N reasoning deltas took; the ledger records
// N reasoning tokens; the answer check is not confused by the reasoning.
func TestReasoningAgainstSimulator(t *testing.T) {
	const n = 12
	sim, simURL := startSimulator(t, func(o *simulator.Options) {
		o.Trace = true
		simtest.Reasoning(n)(o)
	})
	tg := rqTarget(simURL)
	tg.Model = ""
	r := newTestRequester(t, tg, simProbe(config.APIChat), Options{})
	results := map[string]*probe.Result{}
	for i := range 10 {
		res := doRequest(context.Background(), r, uint64(i+1))
		if res.Disposition != probe.Accepted {
			t.Fatalf("request %d: %s/%s %v %q", i, res.Disposition, res.Reason, res.QualityFailures, res.Error)
		}
		rec := ledger.NewRecord(res, config.RecordTextNone)
		if rec.ReasoningTokens != n || res.ReasoningEvents != n || rec.TTFAS == nil {
			t.Fatalf("request %d: ledger reasoning_tokens %d, reasoning events %d, ttfa_s %v; want %d, %d, set",
				i, rec.ReasoningTokens, res.ReasoningEvents, rec.TTFAS, n, n)
		}
		results[res.RequestID] = res
	}
	var errs []time.Duration
	for _, pair := range traced(t, sim, results) {
		res, tr := pair.res, pair.rec
		var reasoning, answer []time.Time
		for _, ev := range tr.Events {
			switch {
			case ev.Kind == "reasoning":
				reasoning = append(reasoning, ev.Time)
			case ev.Tokens > 0 && (ev.Kind == "content" || ev.Kind == "finish"):
				answer = append(answer, ev.Time)
			}
		}
		if len(reasoning) != n || len(answer) == 0 {
			t.Fatalf("%s: %d reasoning and %d answer events in the trace, want %d and some", tr.RequestID, len(reasoning), len(answer), n)
		}
		truth := answer[0].Sub(reasoning[0])
		if got := res.TTFA - res.TTFT; got < truth/2 {
			t.Errorf("%s: TTFA − TTFT = %v, the trace's reasoning took %v", tr.RequestID, got, truth)
		}
		errs = append(errs, res.Sent.Add(res.TTFT).Sub(reasoning[0]).Abs(), res.Sent.Add(res.TTFA).Sub(answer[0]).Abs(),
			((res.TTFA - res.TTFT) - truth).Abs())
	}
	checkTraceErrors(t, "TTFT/TTFA error against the trace", errs)
}

// tracedResult is a result with the simulator's trace record of its request.
type tracedResult struct {
	res *probe.Result
	rec simulator.TraceRecord
}

// traced pairs every result (by request id) with its trace record, in
// trace order; a result the trace lacks fails the test.
func traced(t *testing.T, sim *simulator.Server, results map[string]*probe.Result) []tracedResult {
	t.Helper()
	var out []tracedResult
	for _, rec := range sim.Trace() {
		if res := results[rec.RequestID]; res != nil {
			out = append(out, tracedResult{res, rec})
		}
	}
	if len(out) != len(results) {
		t.Fatalf("%d of %d requests missing from the trace", len(results)-len(out), len(results))
	}
	return out
}

// checkTraceErrors logs the spread of the client's timing errors against
// the trace and fails when their p90 is above 2 ms.
func checkTraceErrors(t *testing.T, what string, errs []time.Duration) {
	t.Helper()
	slices.Sort(errs)
	p90 := errs[len(errs)*9/10]
	t.Logf("%s over %d samples: p50 %v, p90 %v, max %v", what, len(errs), errs[len(errs)/2], p90, errs[len(errs)-1])
	if p90 > 2*time.Millisecond {
		t.Fatalf("timing error p90 %v, want <= 2ms", p90)
	}
}

// TestToolCallAgainstSimulator sends a forced tool call to the simulator:
// the assembled call passes quality.tool_call with its arguments schema,
// and with --fault.bad-tool-call 1 the request fails check tool_call.
func TestToolCallAgainstSimulator(t *testing.T) {
	schema := testfile.Temp(t, "weather.schema.json",
		`{"type":"object","required":["city","unit"],"properties":{"city":{"type":"string"},"unit":{"enum":["c","f"]}}}`)
	var tools []any
	if err := json.Unmarshal([]byte(`[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object",
		"properties":{"city":{"type":"string"},"unit":{"type":"string","enum":["c","f"]}},"required":["city","unit"]}}}]`), &tools); err != nil {
		t.Fatal(err)
	}
	sim, simURL := startSimulator(t, nil)
	tg := rqTarget(simURL)
	tg.Model = ""
	p := rqProbe(config.APIChat)
	p.Request.MaxTokens = 128 // room for the whole call: a call cut at max_tokens ends "length"
	p.Request.Extra = map[string]any{"tools": tools, "tool_choice": "required"}
	p.Quality.FinishReasons = []string{"tool_calls"}
	p.Quality.ToolCall = &config.ToolCallCheck{Name: "get_weather", ArgumentsSchema: schema}
	r := newTestRequester(t, tg, p, Options{})
	for _, tc := range []struct {
		name   string
		faults simulator.Faults
		want   probe.Disposition
		checks []string
	}{
		{"valid call", simulator.Faults{}, probe.Accepted, nil},
		{"bad tool call", simulator.Faults{BadToolCall: 1}, probe.QualityFailure, []string{probe.CheckToolCall}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sim.SetFaults(tc.faults)
			res := doRequest(context.Background(), r, 1)
			if res.Disposition != tc.want || !slices.Equal(res.QualityFailures, tc.checks) {
				t.Fatalf("got %s/%s %v %q, want %s %v; calls %+v", res.Disposition, res.Reason, res.QualityFailures, res.Error, tc.want, tc.checks, res.ToolCalls)
			}
			if len(res.ToolCalls) != 1 || res.ToolCalls[0].Name != "get_weather" || res.TTFA != res.TTFT {
				t.Errorf("tool calls %+v, TTFA %v, TTFT %v: want one get_weather call, TTFA = TTFT", res.ToolCalls, res.TTFA, res.TTFT)
			}
			if rec := ledger.NewRecord(res, config.RecordTextNone); rec.ToolCalls != 1 {
				t.Errorf("ledger tool_calls = %d, want 1", rec.ToolCalls)
			}
		})
	}
}

// TestReasoningStallAgainstSimulator: a reasoning stream that stalls
// before its answer ends client_timeout with a TTFT but no TTFA; latency
// views take its TTFA at the time it was abandoned, which violates
// slo.ttfa, and the ledger has ttfa_s null and the reasoning events seen.
func TestReasoningStallAgainstSimulator(t *testing.T) {
	_, simURL := startSimulator(t, func(o *simulator.Options) {
		simtest.Reasoning(40)(o)
		simtest.Faults(simulator.Faults{Stall: 1, StallDuration: 5 * time.Second})(o)
	})
	tg := rqTarget(simURL)
	tg.Model = ""
	p := simProbe(config.APIChat)
	p.Timeout = model.Duration(time.Second)
	p.SLO = config.SLO{TTFA: model.Duration(200 * time.Millisecond)}
	r := newTestRequester(t, tg, p, Options{})
	res := doRequest(context.Background(), r, 1)
	ttfa, observed := res.ObservedTTFA()
	if res.Disposition != probe.ClientTimeout || res.TTFT == 0 || res.TTFA != 0 || !observed || ttfa != res.Elapsed {
		t.Fatalf("got %s/%s TTFT %v TTFA %v observed %v at %v (elapsed %v), want client_timeout with TTFT, no TTFA, observed at elapsed",
			res.Disposition, res.Reason, res.TTFT, res.TTFA, observed, ttfa, res.Elapsed)
	}
	if !slices.Equal(res.SLOViolations, []string{probe.SLOTTFA}) {
		t.Errorf("SLO violations %v, want [ttfa]", res.SLOViolations)
	}
	rec := ledger.NewRecord(res, config.RecordTextNone)
	if rec.TTFAS != nil || rec.TTFTS == nil || rec.ReasoningTokens == 0 || rec.ReasoningTokens >= 40 || rec.ReasoningTokens != res.ReasoningEvents {
		t.Errorf("ledger ttfa_s %v, ttft_s %v, reasoning_tokens %d (events %d): want null, set, the events before the stall",
			rec.TTFAS, rec.TTFTS, rec.ReasoningTokens, res.ReasoningEvents)
	}
}
