package bench

import (
	"math"
	"slices"
	"time"

	"github.com/vllm-prober/vllm-prober/probe"
)

// Percentile is one requested percentile of a metric, in milliseconds.
type Percentile struct {
	P  float64
	MS float64
}

// Dist summarises one latency metric in milliseconds, as vLLM does: mean,
// median, population standard deviation and numpy's linear percentiles.
// An empty sample gives zeros, as numpy does for vLLM's `or 0`.
type Dist struct {
	Mean, Median, Std float64
	Percentiles       []Percentile
}

// Metrics is vLLM's BenchmarkMetrics computed from the offered requests,
// plus the prober's offered/completed/goodput/acceptance figures.
type Metrics struct {
	// vLLM's figures. Completed counts requests whose stream completed
	// (accepted, latency_failure or quality_failure); Failed is the rest.
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

	// The prober's figures.
	Offered      int
	Sent         int
	Dispositions map[probe.Disposition]int // every disposition, zeros included
	Reasons      map[string]int            // failure reasons seen
	OfferedRate  float64                   // offered / planned span; +Inf when all at once
	SendRate     float64                   // sent / (last send - start)
	Goodput      float64                   // accepted per second of duration
	Acceptance   float64                   // accepted / offered
}

// AllDispositions lists the dispositions a bench report accounts for.
var AllDispositions = append(slices.Clone(probe.Dispositions), probe.Unfinished)

// completed reports whether a request's stream completed, whatever the
// judge then said of it: vLLM's "successful".
func completed(r *probe.Result) bool {
	switch r.Disposition {
	case probe.Accepted, probe.LatencyFailure, probe.QualityFailure:
		return true
	}
	return false
}

// Compute derives the metrics of a run. good is vLLM's --goodput rule (it
// may be unset); percentiles and the metric names select the Dists.
func Compute(run *Run, good Goodput, percentiles []float64) Metrics {
	m := Metrics{Duration: run.Duration(), Offered: len(run.Results), Dists: map[string]Dist{},
		Dispositions: map[probe.Disposition]int{}, Reasons: map[string]int{}}
	for _, d := range AllDispositions {
		m.Dispositions[d] = 0
	}
	samples := map[string][]float64{}
	var lastSent time.Time
	goodCount := 0
	for _, r := range run.Results {
		m.Dispositions[r.Disposition]++
		if r.Reason != "" && r.Disposition != probe.Accepted {
			m.Reasons[r.Reason]++
		}
		if !r.Sent.IsZero() {
			m.Sent++
			lastSent = later(lastSent, r.Sent)
		}
		if !completed(r) {
			m.Failed++
			continue
		}
		m.Completed++
		m.TotalInput += r.PromptTokens
		m.TotalOutput += r.OutputTokens
		samples[MetricTTFT] = append(samples[MetricTTFT], ms(r.TTFT))
		samples[MetricE2EL] = append(samples[MetricE2EL], ms(r.E2EL))
		if r.OutputTokens > 1 {
			samples[MetricTPOT] = append(samples[MetricTPOT], ms(r.TPOT))
		}
		for _, d := range r.ITLs {
			samples[MetricITL] = append(samples[MetricITL], ms(d))
		}
		if good.IsSet() && good.Good(r.TTFT, r.TPOT, r.E2EL) {
			goodCount++
		}
	}
	for _, name := range metricNames {
		m.Dists[name] = distOf(samples[name], percentiles)
	}
	m.rates(run, goodCount, lastSent)
	m.MaxOutputTokensPerSecond, m.MaxConcurrentRequests = peaks(run.Results)
	return m
}

// rates fills the per-second figures.
func (m *Metrics) rates(run *Run, goodCount int, lastSent time.Time) {
	if s := m.Duration.Seconds(); s > 0 {
		m.RequestThroughput = float64(m.Completed) / s
		m.RequestGoodput = float64(goodCount) / s
		m.OutputThroughput = float64(m.TotalOutput) / s
		m.TotalTokenThroughput = float64(m.TotalInput+m.TotalOutput) / s
		m.Goodput = float64(m.Dispositions[probe.Accepted]) / s
	}
	m.OfferedRate = math.Inf(1)
	if run.Span > 0 {
		m.OfferedRate = float64(m.Offered) / run.Span.Seconds()
	}
	m.SendRate = math.Inf(1)
	if d := lastSent.Sub(run.Start); d > 0 {
		m.SendRate = float64(m.Sent) / d.Seconds()
	}
	if m.Offered > 0 {
		m.Acceptance = float64(m.Dispositions[probe.Accepted]) / float64(m.Offered)
	}
}

// peaks computes vLLM's peak output token throughput and peak concurrent
// requests: one-second buckets from the earliest send of a completed
// request; every choice message counts as one token at start+ttft+sum(itl);
// a request counts in every bucket from its start to its end.
func peaks(results []*probe.Result) (float64, int) {
	var first, last time.Time
	for _, r := range results {
		if completed(r) {
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
		if !completed(r) {
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

// distOf summarises samples (milliseconds).
func distOf(xs []float64, percentiles []float64) Dist {
	if len(xs) == 0 {
		xs = []float64{0}
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	d := Dist{Median: quantile(s, 50)}
	for _, x := range s {
		d.Mean += x
	}
	d.Mean /= float64(len(s))
	for _, x := range s {
		d.Std += (x - d.Mean) * (x - d.Mean)
	}
	d.Std = math.Sqrt(d.Std / float64(len(s)))
	for _, p := range percentiles {
		d.Percentiles = append(d.Percentiles, Percentile{P: p, MS: quantile(s, p)})
	}
	return d
}

// quantile is numpy.percentile's default (linear) method on sorted s.
func quantile(s []float64, p float64) float64 {
	if len(s) == 0 {
		return 0
	}
	h := (float64(len(s)) - 1) * p / 100
	lo := int(math.Floor(h))
	if lo >= len(s)-1 {
		return s[len(s)-1]
	}
	return s[lo] + (h-float64(lo))*(s[lo+1]-s[lo])
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
