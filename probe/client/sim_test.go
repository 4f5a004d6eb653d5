package client

import (
	"context"
	"regexp"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/common/model"

	"github.com/vllm-prober/vllm-prober/config"
	"github.com/vllm-prober/vllm-prober/probe"
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
	for _, rec := range sim.Trace() {
		res := results[rec.RequestID]
		if res == nil {
			continue
		}
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
	if len(errs) == 0 {
		t.Fatal("no traced request matched")
	}
	slices.Sort(errs)
	p50, p90 := errs[len(errs)/2], errs[len(errs)*9/10]
	t.Logf("client-server timing error over %d samples: p50 %v, p90 %v, max %v", len(errs), p50, p90, errs[len(errs)-1])
	if p90 > 2*time.Millisecond {
		t.Fatalf("timing error p90 %v, want <= 2ms", p90)
	}
}
