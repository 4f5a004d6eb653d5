package perf

import (
	"context"
	"fmt"
	"time"

	"github.com/vllm-prober/vllm-prober/probe"
	"github.com/vllm-prober/vllm-prober/simulator"
)

// FidelityResult compares the prober's measurements with the simulator's
// ground truth at one offered rate. Errors are absolute values.
type FidelityResult struct {
	Rate     float64
	Requests int // requests compared (accepted, traced)
	Skipped  int // finished requests that were not accepted: not compared
	// TTFT is |client TTFT - (first content write - handler arrival)|.
	TTFT Stats
	// ITL is |client gap - gap between the same two writes| for every gap.
	ITL Stats
	// Trip is handler arrival minus the client's send time and Delivery the
	// client's read of the first event minus its write: TTFT's error is
	// their sum. Signed, so no absolute value.
	Trip, Delivery Stats
}

// Fidelity runs the engine with the real request path against an
// in-process simulator (jitter off, trace on) at rate requests/s for d and
// compares every measurement with the trace. The simulator's batch is large
// and its per-sequence decode cost small so that 500 requests/s do not
// overload it: the point is the prober's error, not the server's latency.
func Fidelity(ctx context.Context, rate float64, d time.Duration, outputTokens int) (FidelityResult, error) {
	sim, url, err := startSimulator(func(o *simulator.Options) {
		o.Trace, o.TraceLimit = true, 1<<20
		o.MaxNumSeqs, o.DecodePerSeq = 1024, 20*time.Microsecond
	})
	if err != nil {
		return FidelityResult{}, err
	}
	defer sim.Close()
	_, results, err := load{url: url, rate: rate, burstiness: 1, outputTokens: outputTokens, duration: d}.run(ctx)
	if err != nil {
		return FidelityResult{}, err
	}
	trace := map[string]simulator.TraceRecord{}
	for _, rec := range sim.Trace() {
		trace[rec.RequestID] = rec
	}
	out, err := compare(results, trace)
	out.Rate = rate
	return out, err
}

// compare matches results with trace records (errorsOf) and summarizes
// the errors.
func compare(results []*probe.Result, trace map[string]simulator.TraceRecord) (FidelityResult, error) {
	e, err := errorsOf(results, trace)
	if err != nil {
		return FidelityResult{Requests: e.requests, Skipped: e.skipped}, err
	}
	return FidelityResult{Requests: e.requests, Skipped: e.skipped, TTFT: Summarize(e.ttft), ITL: Summarize(e.itl),
		Trip: Summarize(e.trip), Delivery: Summarize(e.delivery)}, nil
}

// burstGap is the largest server gap between two token events that counts
// as one burst of writes: the simulator wrote the second right after the
// first (engine outputs that queued for the handler), not one engine step
// later.
const burstGap = 100 * time.Microsecond

// errorSamples are the errors of every compared request and gap, as
// FidelityResult defines them, before they are summarized.
type errorSamples struct {
	requests, skipped         int
	ttft, itl, trip, delivery []time.Duration
	// burst counts the gaps whose two events the server wrote within
	// burstGap: a client that reads both in one read measures 0 and is
	// right whatever its clock does.
	burst int
}

// errorsOf matches results with trace records. An accepted request
// without its record, or whose token events differ in number, is an
// error: nothing is dropped silently.
func errorsOf(results []*probe.Result, trace map[string]simulator.TraceRecord) (errorSamples, error) {
	var out errorSamples
	for _, res := range results {
		if res.Disposition != probe.Accepted {
			out.skipped++
			continue
		}
		rec, ok := trace[res.RequestID]
		if !ok {
			return out, fmt.Errorf("request %s: no trace record", res.RequestID)
		}
		writes := tokenWrites(rec)
		if len(writes) != res.Chunks || len(res.ITLs) != len(writes)-1 {
			return out, fmt.Errorf("request %s: server wrote %d token events, client saw %d", res.RequestID, len(writes), res.Chunks)
		}
		out.requests++
		out.ttft = append(out.ttft, (res.TTFT - writes[0].Sub(rec.Arrival)).Abs())
		out.trip = append(out.trip, rec.Arrival.Sub(res.Sent))
		out.delivery = append(out.delivery, res.Sent.Add(res.TTFT).Sub(writes[0]))
		for i, gap := range res.ITLs {
			server := writes[i+1].Sub(writes[i])
			if server <= burstGap {
				out.burst++
			}
			out.itl = append(out.itl, (gap - server).Abs())
		}
	}
	return out, nil
}

// tokenWrites returns the write times of the token-carrying events.
func tokenWrites(rec simulator.TraceRecord) []time.Time {
	var out []time.Time
	for _, ev := range rec.Events {
		if ev.Tokens > 0 {
			out = append(out, ev.Time)
		}
	}
	return out
}
