package perf

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"runtime"
	"runtime/trace"
	"slices"
	"strconv"
	"time"

	"github.com/alecthomas/kingpin/v2"

	"github.com/vllm-prober/vllm-prober/bench"
	"github.com/vllm-prober/vllm-prober/internal/perf/naive"
	"github.com/vllm-prober/vllm-prober/internal/perf/proc"
	"github.com/vllm-prober/vllm-prober/probe"
	"github.com/vllm-prober/vllm-prober/simulator"
)

// The clients the accuracy part compares, in the order of the first round.
const (
	ClientDaemon = "daemon" // probe/schedule.Engine + probe/client.Requester, as `vllm-prober run`
	ClientBench  = "bench"  // bench.Bench (bench/openloop), as `vllm-prober bench` and capacity
	ClientFloor  = "floor"  // the naive client (internal/perf/naive)
)

// accuracyClients is the order of the first round; each later round starts
// one client further, so no client always runs first or last.
var accuracyClients = []string{ClientDaemon, ClientBench, ClientFloor}

// The accuracy workload: completions, 64 prompt tokens, 16 output tokens
// with ignore_eos, as section 1 (fidelity) uses.
const (
	accuracyInputTokens  = 64
	accuracyOutputTokens = 16
)

// accuracyTimeout bounds every request of every client in the accuracy
// runs alike (the daemon's probe timeout, bench's --timeout, the naive
// client's http.Client.Timeout): a round stops offering at its duration and
// then waits for its requests up to this bound, so a request in flight at
// the end is measured, not cancelled. A machine that others load may hold
// a request for seconds; a timed-out request fails the run.
const accuracyTimeout = time.Minute

// accuracySimulator is the server of the accuracy runs: the simulator's
// defaults with jitter off, a batch of 4,096 (above a run's concurrency
// while the server keeps up), no prefix cache, and no cost per prompt
// token or per sequence, so the modelled engine keeps up at every rate:
// every step costs the fixed prefill and decode bases (27 ms) whatever the
// batch. With the default
// 50 µs per prompt token, 64-token prompts took 3.2 ms of engine time
// each, more than a second per second from about 300 requests/s: the
// engine fell behind, its outputs queued and reached the handlers in
// bursts written back to back, and the ITL error's median measured how
// many gaps fell in such bursts (which every client reads as 0, rightly)
// instead of the clients' clocks.
func accuracySimulator() simulator.Options {
	o := simulator.DefaultOptions()
	o.Jitter, o.MaxNumSeqs, o.PrefixCaching = 0, 4096, false
	o.PrefillPerToken, o.DecodePerSeq = 0, 0
	return o
}

// simulateArgs are the `vllm-prober simulate` flags that set o's engine
// model, with the trace on.
func simulateArgs(o simulator.Options) []string {
	args := []string{"simulate", "--web.listen-address=127.0.0.1:0", "--trace", "--trace-limit=1048576",
		"--jitter=" + strconv.FormatFloat(o.Jitter, 'g', -1, 64), "--max-num-seqs=" + strconv.Itoa(o.MaxNumSeqs),
		"--prefill-base=" + o.PrefillBase.String(), "--prefill-per-token=" + o.PrefillPerToken.String(),
		"--decode-base=" + o.DecodeBase.String(), "--decode-per-seq=" + o.DecodePerSeq.String(), "--no-enable-prefix-caching"}
	if o.PrefixCaching {
		args[len(args)-1] = "--enable-prefix-caching"
	}
	return args
}

// engineShare is the share of each second the modelled engine spends on
// rate requests/s of in prompt and out output tokens beyond its fixed
// step costs: at 1 or more it falls behind whatever the batch.
func engineShare(o simulator.Options, rate float64, in, out int) float64 {
	perRequest := time.Duration(in)*o.PrefillPerToken + time.Duration(out)*o.DecodePerSeq
	return rate * perRequest.Seconds()
}

// AccuracyOptions configures one rate of the accuracy part.
type AccuracyOptions struct {
	Binary   string // vllm-prober, run as `simulate` with its trace on
	Rate     float64
	Duration time.Duration // per client and round
	Rounds   int           // rounds of the three clients, interleaved
	// Trace, when set, records an execution trace (runtime/trace) of this
	// process during each client's run into Trace-<rate>-<round>-<client>.trace,
	// so that what held a client's goroutines can be compared client by
	// client (go tool trace -pprof=sched).
	Trace string
}

// ClientAccuracy is one client's errors in one round.
type ClientAccuracy struct {
	Requests int
	// TTFT is |client TTFT − server TTFT| per request, ITL |client gap −
	// server gap| per gap, Lag the send time − planned time per request.
	TTFT, ITL, Lag Stats
	// Trip is the server's arrival − the client's send time per request,
	// the part of the TTFT error spent before the server saw the request
	// (FidelityResult.Trip).
	Trip Stats
	// Burst is how many of the ITL gaps the server wrote as one burst
	// (errorSamples.burst).
	Burst int
	// samples are the errors Stats summarize, kept for Median's p99.
	samples errorSamples
	lags    []time.Duration
}

// AccuracyResult is every client's accuracy in every round at one rate.
type AccuracyResult struct {
	Rate   float64
	Rounds []map[string]ClientAccuracy
}

// Accuracy starts a simulator process with its trace on, warms it up, and
// runs the daemon's engine, bench's runner and the naive client against it
// one after another, Rounds times, each at Rate requests/s (Poisson) for
// Duration, comparing every request with the simulator's trace. The
// simulator never queues (accuracySimulator): the point is the clients'
// error. A request that did not end accepted or has no trace record fails
// the run.
func Accuracy(ctx context.Context, o AccuracyOptions) (AccuracyResult, error) {
	out := AccuracyResult{Rate: o.Rate}
	sim, err := proc.Start(ctx, o.Binary, proc.SimulatorReady, simulateArgs(accuracySimulator())...)
	if err != nil {
		return out, fmt.Errorf("simulator: %w", err)
	}
	defer sim.Stop()
	url := "http://" + sim.Addr
	// A fresh server process is slower at first (heap growth, goroutine
	// stacks): the first client of the first round paid for it alone. A
	// warm-up run of the naive client, not counted, takes that cost.
	if _, err := accuracyRun(ctx, url, ClientFloor, "warmup", o.Rate, min(o.Duration, time.Second)); err != nil {
		return out, fmt.Errorf("warm-up: %w", err)
	}
	for r := range max(o.Rounds, 1) {
		round := map[string]ClientAccuracy{}
		for k := range accuracyClients {
			name := accuracyClients[(r+k)%len(accuracyClients)]
			a, err := accuracyRunTraced(ctx, o, url, name, r)
			if err != nil {
				return out, fmt.Errorf("round %d, %s: %w", r+1, name, err)
			}
			round[name] = a
		}
		out.Rounds = append(out.Rounds, round)
	}
	return out, nil
}

// accuracyRunTraced is accuracyRun of client name in round r, recorded in
// an execution trace when o.Trace is set.
func accuracyRunTraced(ctx context.Context, o AccuracyOptions, url, name string, r int) (a ClientAccuracy, err error) {
	run := func() error {
		a, err = accuracyRun(ctx, url, name, strconv.Itoa(r), o.Rate, o.Duration)
		return err
	}
	if o.Trace == "" {
		return a, run()
	}
	return a, withTrace(fmt.Sprintf("%s-%g-%d-%s.trace", o.Trace, o.Rate, r+1, name), run)
}

// withTrace runs run while this process's execution trace (runtime/trace)
// is written to path, and returns run's error, or the trace's.
func withTrace(path string, run func() error) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("execution trace: %w", err)
	}
	defer f.Close()
	if err := trace.Start(f); err != nil {
		return fmt.Errorf("execution trace %s: %w", path, err)
	}
	err = run()
	trace.Stop()
	if cerr := f.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("execution trace %s: %w", path, cerr)
	}
	return err
}

// accuracyRun clears the server's trace, runs one client and compares its
// results with the trace.
func accuracyRun(ctx context.Context, url, name, id string, rate float64, d time.Duration) (ClientAccuracy, error) {
	if err := traceRequest(ctx, http.MethodDelete, url, nil); err != nil {
		return ClientAccuracy{}, err
	}
	runtime.GC() // the previous client's garbage is not this one's cost
	var results []*probe.Result
	var err error
	switch name {
	case ClientDaemon:
		_, results, err = load{url: url, rate: rate, burstiness: 1, outputTokens: accuracyOutputTokens, duration: d,
			timeout: accuracyTimeout, grace: accuracyTimeout}.run(ctx)
	case ClientBench:
		results, err = runBench(ctx, url, rate, d)
	case ClientFloor:
		var f *naive.Client
		if f, err = naive.New(url, simulator.DefaultOptions().Model, accuracyInputTokens, accuracyOutputTokens, accuracyTimeout); err == nil {
			results = f.Run(ctx, id, naive.Offsets(rate, d))
		}
	}
	if err != nil {
		return ClientAccuracy{}, err
	}
	trace, err := fetchTrace(ctx, url, results)
	if err != nil {
		return ClientAccuracy{}, err
	}
	return accuracyOf(results, trace)
}

// traceWait bounds how long fetchTrace waits for the server to record the
// requests a client has seen end.
const traceWait = 5 * time.Second

// fetchTrace reads the server's trace by request ID. The server records a
// request when its handler returns, just after the client has read
// [DONE], so the last records may lag the client: it asks again until
// every result's record is there or traceWait has passed (accuracyOf then
// fails on the missing one).
func fetchTrace(ctx context.Context, url string, results []*probe.Result) (map[string]simulator.TraceRecord, error) {
	deadline := time.Now().Add(traceWait)
	for {
		var recs []simulator.TraceRecord
		if err := traceRequest(ctx, http.MethodGet, url, &recs); err != nil {
			return nil, err
		}
		trace := make(map[string]simulator.TraceRecord, len(recs))
		for _, rec := range recs {
			trace[rec.RequestID] = rec
		}
		complete := !slices.ContainsFunc(results, func(r *probe.Result) bool { _, ok := trace[r.RequestID]; return !ok })
		if complete || time.Now().After(deadline) {
			return trace, nil
		}
		select {
		case <-time.After(100 * time.Millisecond):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// accuracyOf compares results with the trace (compare) and adds the send
// lag. Every request must have ended accepted: the server is sized not to
// fail, so a failure is a fault of the run, not a sample to drop.
func accuracyOf(results []*probe.Result, trace map[string]simulator.TraceRecord) (ClientAccuracy, error) {
	for _, r := range results {
		if r.Disposition != probe.Accepted {
			return ClientAccuracy{}, fmt.Errorf("request %s ended %s/%s: %s", r.RequestID, r.Disposition, r.Reason, r.Error)
		}
	}
	e, err := errorsOf(results, trace)
	if err != nil {
		return ClientAccuracy{}, err
	}
	lags := make([]time.Duration, len(results))
	for i, r := range results {
		lags[i] = r.Lag
	}
	return ClientAccuracy{Requests: e.requests, TTFT: Summarize(slices.Clone(e.ttft)), ITL: Summarize(slices.Clone(e.itl)),
		Lag: Summarize(slices.Clone(lags)), Trip: Summarize(slices.Clone(e.trip)), Burst: e.burst, samples: e, lags: lags}, nil
}

// runBench runs bench as `vllm-prober bench` does, from its flags, for the
// requests of d at rate, and returns its results.
func runBench(ctx context.Context, url string, rate float64, d time.Duration) ([]*probe.Result, error) {
	app := kingpin.New("perf", "")
	cmd := app.Command("bench", "")
	flags := bench.RegisterBenchFlags(cmd)
	args := []string{"bench", "--base-url=" + url, "--random-input-len=" + strconv.Itoa(accuracyInputTokens),
		"--random-output-len=" + strconv.Itoa(accuracyOutputTokens), "--ignore-eos", "--seed=1",
		"--num-prompts=" + strconv.Itoa(len(naive.Offsets(rate, d))), "--request-rate=" + strconv.FormatFloat(rate, 'g', -1, 64),
		"--timeout=" + accuracyTimeout.String()}
	if _, err := app.Parse(args); err != nil {
		return nil, fmt.Errorf("bench flags: %w", err)
	}
	o, err := flags.Options()
	if err != nil {
		return nil, err
	}
	out, err := bench.Bench(ctx, o, bench.Env{})
	if err != nil {
		return nil, err
	}
	return out.Run.Results, nil
}

// traceRequest sends method to the simulator's /sim/trace and decodes the
// answer into into (nil: none expected).
func traceRequest(ctx context.Context, method, url string, into any) error {
	req, err := http.NewRequestWithContext(ctx, method, url+"/sim/trace", nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("%s /sim/trace: %w", method, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<10))
		return fmt.Errorf("%s /sim/trace: %s: %s", method, resp.Status, b)
	}
	if into == nil {
		return nil
	}
	if err := json.NewDecoder(resp.Body).Decode(into); err != nil {
		return fmt.Errorf("decode /sim/trace: %w", err)
	}
	return nil
}

// Median returns, per client, the median over the rounds of each p50
// (which one disturbed round does not move) and the p99 of every round's
// samples together, with their count in N: a round at 10 requests/s has
// too few requests for a p99 of its own (the p99 of 100 is the second
// largest).
func (a AccuracyResult) Median(client string) ClientAccuracy {
	var ttft50, itl50, lag50, trip50 []time.Duration
	var ttft, itl, lag, trip []time.Duration
	var out ClientAccuracy
	for _, r := range a.Rounds {
		c := r[client]
		out.Requests += c.Requests
		out.Burst += c.Burst
		ttft50, itl50, lag50, trip50 = append(ttft50, c.TTFT.P50), append(itl50, c.ITL.P50), append(lag50, c.Lag.P50), append(trip50, c.Trip.P50)
		ttft, itl, lag = append(ttft, c.samples.ttft...), append(itl, c.samples.itl...), append(lag, c.lags...)
		trip = append(trip, c.samples.trip...)
	}
	pooled := func(p50s, all []time.Duration) Stats {
		s := Summarize(all)
		s.P50 = Summarize(p50s).P50
		return s
	}
	out.TTFT, out.ITL, out.Lag, out.Trip = pooled(ttft50, ttft), pooled(itl50, itl), pooled(lag50, lag), pooled(trip50, trip)
	return out
}
