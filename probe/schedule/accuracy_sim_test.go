package schedule

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/common/model"

	"github.com/vllm-prober/vllm-prober/config"
	"github.com/vllm-prober/vllm-prober/probe"
	"github.com/vllm-prober/vllm-prober/simulator"
	"github.com/vllm-prober/vllm-prober/simulator/simtest"
)

// TestEngineAccuracyAgainstSimulator runs the engine with the real request
// path at 20 requests/s (chat and completions, 10/s each) against the
// simulator with faults on and its ground-truth trace on, and checks every
// client measurement against the trace:
//
//   - every sent request has a trace record, and the client saw exactly the
//     token events the server wrote (no more for a failed request);
//   - causality: the request reached the handler after it was sent.
//
// How close the client's times are to the trace is a measurement, not a
// unit test: the fidelity benchmark of internal/perf (`make bench`, written
// up in docs/BENCHMARKS.md) reports the error percentiles against the
// same ground truth, on a machine that is not running other tests.
func TestEngineAccuracyAgainstSimulator(t *testing.T) {
	ttft, itl := accuracyRound(t)
	for _, s := range []struct {
		name string
		errs []time.Duration
		min  int
	}{{"ttft", ttft, 25}, {"itl", itl, 150}} {
		p50, p99, worst := quantiles(s.errs)
		t.Logf("%s error over %d samples: p50 %v, p99 %v, max %v", s.name, len(s.errs), p50, p99, worst)
		if len(s.errs) < s.min {
			t.Errorf("%s: %d samples, want at least %d", s.name, len(s.errs), s.min)
		}
	}
}

// accuracyRound runs the engine for two seconds against a fresh simulator
// and returns the absolute TTFT and ITL errors of every sent request.
func accuracyRound(t *testing.T) (ttft, itl []time.Duration) {
	t.Helper()
	o := simulator.DefaultOptions()
	o.Seed, o.Jitter, o.Trace = 1, 0, true
	o.Faults = simulator.Faults{HTTP500: 0.1, Disconnect: 0.1, ErrorEvent: 0.05}
	sim, simURL := simtest.Start(t, o)
	defer sim.Close()

	l := newRecSink()
	e := NewEngine(EngineOptions{Sinks: []probe.Sink{l}, Grace: time.Second})
	cfg := &config.Config{
		Targets: []config.Target{{Name: "sim", URL: simURL, Model: "sim-llama"}},
		Probes:  []config.Probe{engSimProbe("chat", config.APIChat, 10), engSimProbe("completions", config.APICompletions, 10)},
	}
	for i := range cfg.Probes {
		p := &cfg.Probes[i]
		p.Timeout = model.Duration(2 * time.Second)
		p.Workload = config.Workload{Random: &config.RandomWorkload{InputTokens: 64, OutputTokens: 8}}
		p.Request.IgnoreEOS = true
	}
	if err := e.Apply(cfg); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Second)
	if err := e.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	trace := map[string]simulator.TraceRecord{}
	for _, rec := range sim.Trace() {
		trace[rec.RequestID] = rec
	}
	var results []*probe.Result
	for _, p := range cfg.Probes {
		results = append(results, l.results("sim", p.Name)...)
	}
	return timingErrors(t, results, trace)
}

// timingErrors matches each sent result with its trace record and returns
// the absolute TTFT and ITL errors. A mismatch between what the client saw
// and what the server wrote fails the test.
func timingErrors(t *testing.T, results []*probe.Result, trace map[string]simulator.TraceRecord) (ttft, itl []time.Duration) {
	t.Helper()
	dispositions := map[string]int{}
	var trip, delivery []time.Duration
	for _, res := range results {
		dispositions[fmt.Sprint(res.Disposition, "/", res.Reason)]++
		if res.Sent.IsZero() {
			continue
		}
		rec, ok := trace[res.RequestID]
		if !ok {
			t.Errorf("request %s (%s/%s) was sent but has no trace record", res.RequestID, res.Disposition, res.Reason)
			continue
		}
		var writes []time.Time
		for _, ev := range rec.Events {
			if ev.Tokens > 0 {
				writes = append(writes, ev.Time)
			}
		}
		if res.Chunks > len(writes) || (res.Disposition == probe.Accepted && res.Chunks != len(writes)) {
			t.Errorf("request %s (%s): client saw %d token events, server wrote %d", res.RequestID, res.Disposition, res.Chunks, len(writes))
			continue
		}
		if res.Chunks == 0 {
			continue
		}
		ttft = append(ttft, (res.TTFT - writes[0].Sub(rec.Arrival)).Abs())
		trip = append(trip, rec.Arrival.Sub(res.Sent))
		delivery = append(delivery, res.Sent.Add(res.TTFT).Sub(writes[0]))
		if rec.Arrival.Before(res.Sent) {
			t.Errorf("request %s reached the handler %v before it was sent", res.RequestID, res.Sent.Sub(rec.Arrival))
		}
		for i, gap := range res.ITLs {
			itl = append(itl, (gap - writes[i+1].Sub(writes[i])).Abs())
		}
	}
	t.Logf("dispositions: %v", dispositions)
	if dispositions[fmt.Sprint(probe.Accepted, "/")] == 0 || len(dispositions) < 2 {
		t.Errorf("want accepted and failed requests, got %v", dispositions)
	}
	// The TTFT error is the request's trip plus the first event's delivery.
	for _, part := range []struct {
		name string
		d    []time.Duration
	}{{"sent to handler arrival", trip}, {"first event write to read", delivery}} {
		p50, p99, worst := quantiles(part.d)
		t.Logf("%s: p50 %v, p99 %v, max %v", part.name, p50, p99, worst)
	}
	return ttft, itl
}

// quantiles returns the nearest-rank p50 and p99 and the maximum of errs.
func quantiles(errs []time.Duration) (p50, p99, worst time.Duration) {
	if len(errs) == 0 {
		return 0, 0, 0
	}
	s := slices.Clone(errs)
	slices.Sort(s)
	rank := func(q float64) time.Duration { return s[max(0, int(q*float64(len(s))+0.999999)-1)] }
	return rank(0.50), rank(0.99), s[len(s)-1]
}
