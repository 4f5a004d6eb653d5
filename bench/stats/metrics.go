// Package stats computes what a bench or capacity run measured: vLLM's
// BenchmarkMetrics (numpy's linear percentiles over the completed
// requests) and the prober's offered, completed, goodput and acceptance
// figures with timeouts counted at the timeout. Goodput holds the
// per-request objectives of vLLM's --goodput that decide a request good.
package stats

import (
	"math"
	"slices"
	"time"

	"github.com/vllm-prober/vllm-prober/bench/openloop"
	"github.com/vllm-prober/vllm-prober/internal/quantile"
	"github.com/vllm-prober/vllm-prober/probe"
)

// Metric names of the percentile metrics.
const (
	MetricTTFT = "ttft"
	MetricTPOT = "tpot"
	MetricITL  = "itl"
	MetricE2EL = "e2el"
	// MetricTTFA is the time to the first answer token, reported only
	// when the server streamed reasoning (Metrics.Reasoned).
	MetricTTFA = "ttfa"
)

// vLLM's client-side queueing metrics, reported with --max-concurrency
// when --percentile-metrics names them: the wait for a concurrency slot,
// and E2EL with that wait (only for a finite --request-rate).
const (
	MetricClientQueue  = "client_queue_time"
	MetricE2ELAndQueue = "e2el_including_client_queue"
)

// RequestMetrics lists the request metrics in vLLM's print order.
var RequestMetrics = []string{MetricTTFT, MetricTPOT, MetricITL, MetricE2EL}

// AllMetrics adds the queueing metrics, which vLLM prints last.
var AllMetrics = append(slices.Clone(RequestMetrics), MetricClientQueue, MetricE2ELAndQueue)

// Percentile is one requested percentile of a metric, in milliseconds.
type Percentile struct {
	P  float64
	MS float64
}

// Dist summarises one latency metric in milliseconds, as vLLM does: mean,
// median, population standard deviation and numpy's linear percentiles.
// An empty sample gives zeros, as numpy does for vLLM's `or 0`, and sets
// Empty: the metric was not measured, and the zeros are no request's
// latency.
type Dist struct {
	Mean, Median, Std float64
	Percentiles       []Percentile
	Empty             bool
}

// Metrics is vLLM's BenchmarkMetrics computed from the offered requests,
// plus the prober's offered/completed/goodput/acceptance figures.
type Metrics struct {
	// vLLM's figures. Completed counts requests whose stream completed
	// (accepted, latency_failure or quality_failure): vLLM's "successful";
	// Failed is the rest. Duration is vLLM's benchmark duration: from the
	// start of the run to the end of its last request.
	Completed, Failed        int
	TotalInput, TotalOutput  int
	Duration                 time.Duration
	RequestThroughput        float64
	RequestGoodput           float64 // vLLM's --goodput rule over completed requests
	OutputThroughput         float64
	TotalTokenThroughput     float64
	MaxOutputTokensPerSecond float64
	MaxConcurrentRequests    int
	Dists                    map[string]Dist // by metric name
	// Reasoned says some response streamed reasoning; only then is
	// Dists[MetricTTFA] set, over the completed requests that answered.
	Reasoned bool

	// The prober's figures, by the probe package's definitions.
	Offered   int // requests whose planned time came
	Abandoned int // given up by the prober itself (probe.Result.Abandoned)
	Sent      int
	// ServerCompleted counts the requests the server completed, useful or
	// not (probe.Result.ServerCompleted); Timeouts the client timeouts.
	ServerCompleted, Timeouts int
	// PromptTokens and OutputTokens are the totals of the server-completed
	// requests.
	PromptTokens, OutputTokens int
	// Window is the wall-clock measurement time: the first send to the
	// last terminal response (or timeout, or cut) of a sent request.
	Window       time.Duration
	Dispositions map[probe.Disposition]int // every disposition, zeros included
	Reasons      map[string]int            // failure reasons seen
	// OfferedRate is offered / planned span, or offered / the time offering
	// lasted when the run was interrupted; +Inf when all at once.
	OfferedRate         float64
	SendRate            float64 // sent / (last send - start); 0 when nothing was sent
	CompletedThroughput float64 // ServerCompleted per second of Window
	Goodput             float64 // accepted per second of Window
	Acceptance          float64 // accepted / (offered - abandoned)
	// Latency holds TTFT, TPOT and E2EL of the completed streams and of
	// the client timeouts and unfinished requests, counted at the time
	// they were given up (censored): see censored.
	Latency map[string]Dist
	// SteadyMetric is the latency the steady-state check compares: the
	// censored TTFT, or the censored E2EL for an embeddings probe, whose
	// answer is its first and only output (MetricTTFT or MetricE2EL).
	// SteadyFirstThird and SteadyLastThird are its medians (ms) over the
	// first and the last third of those requests in planned order; both 0
	// with fewer than steadyMinSamples of them.
	SteadyMetric                      string
	SteadyFirstThird, SteadyLastThird float64
}

// steadyMinSamples is the fewest requests whose steady thirds are compared.
const steadyMinSamples = 6

// AllDispositions lists the dispositions a bench report accounts for.
var AllDispositions = append(slices.Clone(probe.Dispositions), probe.Unfinished)

// Completed reports whether a request's stream completed, whatever the
// judge then said of it: vLLM's "successful".
func Completed(r *probe.Result) bool {
	switch r.Disposition {
	case probe.Accepted, probe.LatencyFailure, probe.QualityFailure:
		return true
	}
	return false
}

// Options are the definitions Compute applies to a run.
type Options struct {
	// Good is vLLM's --goodput rule: whether a completed request's
	// latencies meet every objective given. nil = no goodput.
	Good        func(ttft, tpot, e2el time.Duration) bool
	Percentiles []float64 // the Dists' percentiles
}

// Compute derives the metrics of a run.
func Compute(run *openloop.Run, o Options) Metrics {
	m := Metrics{Duration: run.Duration(), Offered: len(run.Results), Dists: map[string]Dist{},
		Dispositions: map[probe.Disposition]int{}, Reasons: map[string]int{}}
	for _, d := range AllDispositions {
		m.Dispositions[d] = 0
	}
	samples := map[string][]float64{}
	goodCount := 0
	for i, r := range run.Results {
		m.Reasoned = m.Reasoned || r.ReasoningEvents > 0
		m.Dispositions[r.Disposition]++
		if r.Reason != "" && r.Disposition != probe.Accepted {
			m.Reasons[r.Reason]++
		}
		if !Completed(r) {
			m.Failed++
			continue
		}
		m.Completed++
		m.TotalInput += r.PromptTokens
		m.TotalOutput += r.OutputTokens
		samples[MetricTTFT] = append(samples[MetricTTFT], Milliseconds(r.TTFT))
		samples[MetricE2EL] = append(samples[MetricE2EL], Milliseconds(r.E2EL))
		if r.TTFA > 0 {
			samples[MetricTTFA] = append(samples[MetricTTFA], Milliseconds(r.TTFA))
		}
		if r.OutputTokens > 1 {
			samples[MetricTPOT] = append(samples[MetricTPOT], Milliseconds(r.TPOT))
		}
		for _, d := range r.ITLs {
			samples[MetricITL] = append(samples[MetricITL], Milliseconds(d))
		}
		if i < len(run.Queued) {
			samples[MetricClientQueue] = append(samples[MetricClientQueue], Milliseconds(run.Queued[i]))
			samples[MetricE2ELAndQueue] = append(samples[MetricE2ELAndQueue], Milliseconds(r.E2EL+run.Queued[i]))
		}
		if o.Good != nil && o.Good(r.TTFT, r.TPOT, r.E2EL) {
			goodCount++
		}
	}
	for _, name := range AllMetrics {
		m.Dists[name] = distOf(samples[name], o.Percentiles)
	}
	if m.Reasoned {
		m.Dists[MetricTTFA] = distOf(samples[MetricTTFA], o.Percentiles)
	}
	m.vllmRates(goodCount)
	m.MaxOutputTokensPerSecond, m.MaxConcurrentRequests = peaks(run.Results)
	m.ledger(run, o.Percentiles)
	return m
}

// vllmRates fills vLLM's per-second figures: per second of Duration.
func (m *Metrics) vllmRates(goodCount int) {
	if s := m.Duration.Seconds(); s > 0 {
		m.RequestThroughput = float64(m.Completed) / s
		m.RequestGoodput = float64(goodCount) / s
		m.OutputThroughput = float64(m.TotalOutput) / s
		m.TotalTokenThroughput = float64(m.TotalInput+m.TotalOutput) / s
	}
}

// ledger fills the prober's figures.
func (m *Metrics) ledger(run *openloop.Run, percentiles []float64) {
	var firstSent, lastSent, lastEnd time.Time
	for i, r := range run.Results {
		if r.Abandoned() {
			m.Abandoned++
		}
		if r.ServerCompleted() {
			m.ServerCompleted++
			m.PromptTokens += r.PromptTokens
			m.OutputTokens += r.OutputTokens
		}
		if r.Disposition == probe.ClientTimeout {
			m.Timeouts++
		}
		if r.Sent.IsZero() {
			continue
		}
		m.Sent++
		if firstSent.IsZero() || r.Sent.Before(firstSent) {
			firstSent = r.Sent
		}
		lastSent = later(lastSent, r.Sent)
		if i < len(run.Ended) {
			lastEnd = later(lastEnd, run.Ended[i])
		}
	}
	if !firstSent.IsZero() && lastEnd.After(firstSent) {
		m.Window = lastEnd.Sub(firstSent)
	}
	accepted := float64(m.Dispositions[probe.Accepted])
	if s := m.Window.Seconds(); s > 0 {
		m.CompletedThroughput = float64(m.ServerCompleted) / s
		m.Goodput = accepted / s
	}
	m.OfferedRate = math.Inf(1)
	switch {
	case run.Interrupted && run.Stopped.After(run.Start):
		m.OfferedRate = float64(m.Offered) / run.Stopped.Sub(run.Start).Seconds()
	case run.Span > 0:
		m.OfferedRate = float64(m.Offered) / run.Span.Seconds()
	}
	// Nothing sent is a send rate of 0, not all sent at once (+Inf).
	if m.Sent > 0 {
		m.SendRate = math.Inf(1)
		if d := lastSent.Sub(run.Start); d > 0 {
			m.SendRate = float64(m.Sent) / d.Seconds()
		}
	}
	if n := m.Offered - m.Abandoned; n > 0 {
		m.Acceptance = accepted / float64(n)
	}
	var steady []float64
	m.Latency, m.SteadyMetric, steady = censored(run, percentiles)
	if n := len(steady); n >= steadyMinSamples {
		m.SteadyFirstThird = distOf(steady[:n/3], nil).Median
		m.SteadyLastThird = distOf(steady[n-n/3:], nil).Median
	}
}

// censored summarises TTFT, TPOT and E2EL over the completed streams and
// the requests given up before they completed, so overload cannot hide in
// the tail: a client timeout (sent or not: one can time out waiting for
// the model discovery) or an unfinished request that was sent counts at
// the time it was given up (the run's timeout for a client timeout, else
// the time from its send to its end). Its TTFT is the measured one
// when its first token came, else that time; its E2EL is that time; its
// TPOT follows from them when it received more than one token. Server
// failures, which have no latency of a completed response, are left out.
// An embeddings request generates no token: it counts in E2EL only, as a
// client timeout of one is censored into E2EL only (probe.Result.Embeddings;
// docs/design.md, "Embeddings probes").
// It also returns the samples of the steady-state check in planned order
// and their metric: the TTFTs, or the E2ELs of embeddings requests. The daemon's views
// censor at the measured Elapsed instead (probe.Result.ObservedE2EL; docs/design.md,
// section 6, "Timeouts are never dropped").
func censored(run *openloop.Run, percentiles []float64) (map[string]Dist, string, []float64) {
	samples := map[string][]float64{}
	steadyMetric := MetricTTFT
	for i, r := range run.Results {
		ttft, tpot, e2el := r.TTFT, r.TPOT, r.E2EL
		hasTPOT := r.OutputTokens > 1
		switch {
		case Completed(r):
		case r.Disposition == probe.ClientTimeout, r.Disposition == probe.Unfinished && !r.Sent.IsZero():
			e2el = givenUpAfter(run, i)
			if ttft == 0 || ttft > e2el {
				ttft = e2el
			}
			hasTPOT = hasTPOT && r.TTFT > 0
			if hasTPOT {
				tpot = (e2el - ttft) / time.Duration(r.OutputTokens-1)
			}
		default:
			continue
		}
		samples[MetricE2EL] = append(samples[MetricE2EL], Milliseconds(e2el))
		if r.Embeddings {
			steadyMetric = MetricE2EL
			continue
		}
		samples[MetricTTFT] = append(samples[MetricTTFT], Milliseconds(ttft))
		if hasTPOT {
			samples[MetricTPOT] = append(samples[MetricTPOT], Milliseconds(tpot))
		}
	}
	out := map[string]Dist{}
	for _, name := range []string{MetricTTFT, MetricTPOT, MetricE2EL} {
		out[name] = distOf(samples[name], percentiles)
	}
	return out, steadyMetric, samples[steadyMetric]
}

// givenUpAfter is how long after its send request i of run was given up
// (a client timeout never sent: after the start of its timeout).
func givenUpAfter(run *openloop.Run, i int) time.Duration {
	r := run.Results[i]
	if r.Disposition == probe.ClientTimeout && run.Timeout > 0 {
		return run.Timeout
	}
	if r.Sent.IsZero() {
		return r.Elapsed
	}
	if i < len(run.Ended) && run.Ended[i].After(r.Sent) {
		return run.Ended[i].Sub(r.Sent)
	}
	return r.E2EL
}

// peaks computes vLLM's peak output token throughput and peak concurrent
// requests: one-second buckets from the earliest send of a completed
// request; every choice message counts as one token at start+ttft+sum(itl);
// a request counts in every bucket from its start to its end.
func peaks(results []*probe.Result) (float64, int) {
	var first, last time.Time
	for _, r := range results {
		if Completed(r) {
			if first.IsZero() || r.Sent.Before(first) {
				first = r.Sent
			}
			last = later(last, r.Sent.Add(r.E2EL))
		}
	}
	if first.IsZero() {
		return 0, 0
	}
	n := int(math.Ceil(last.Sub(first).Seconds())) + 1
	tokens, conc := make([]float64, n), make([]int, n)
	for _, r := range results {
		if !Completed(r) {
			continue
		}
		t := r.Sent.Sub(first) + r.TTFT
		for i := -1; i < len(r.ITLs); i++ {
			if i >= 0 {
				t += r.ITLs[i]
			}
			if b := int(t.Seconds()); b >= 0 && b < n {
				tokens[b]++
			}
		}
		startB, endB := int(r.Sent.Sub(first).Seconds()), int((r.Sent.Sub(first) + r.E2EL).Seconds())
		for b := startB; b <= endB && b < n; b++ {
			conc[b]++
		}
	}
	return slices.Max(tokens), slices.Max(conc)
}

// distOf summarises samples (milliseconds) as `vllm bench serve` does:
// linearly interpolated percentiles and the population standard deviation.
func distOf(xs []float64, percentiles []float64) Dist {
	empty := len(xs) == 0
	if empty {
		xs = []float64{0}
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	d := Dist{Median: quantile.LinearInterpolated(s, 0.5), Empty: empty}
	for _, x := range s {
		d.Mean += x
	}
	d.Mean /= float64(len(s))
	for _, x := range s {
		d.Std += (x - d.Mean) * (x - d.Mean)
	}
	d.Std = math.Sqrt(d.Std / float64(len(s)))
	for _, p := range percentiles {
		// numpy.percentile divides by 100 first, then interpolates.
		d.Percentiles = append(d.Percentiles, Percentile{P: p, MS: quantile.LinearInterpolated(s, p/100)})
	}
	return d
}

// Milliseconds converts d to the unit of Dist and Percentile.
func Milliseconds(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// LatencyPercentile returns percentile p of a metric's censored Dist
// (Metrics.Latency) in ms, or NaN when the run did not report it or no
// request measured the metric (Dist.Empty): a level whose every request
// failed has no latency, not one of 0 ms.
func (m Metrics) LatencyPercentile(name string, p float64) float64 {
	d := m.Latency[name]
	if d.Empty {
		return math.NaN()
	}
	for _, q := range d.Percentiles {
		if q.P == p {
			return q.MS
		}
	}
	return math.NaN()
}
