package collector

import (
	"slices"
	"time"

	"github.com/prometheus/common/model"

	"github.com/vllm-prober/vllm-prober/config"
)

// vLLM's own histogram boundaries (vllm/v1/metrics/loggers.py), so client
// and server views of the same quantity can be compared bucket by bucket.
var (
	// ttftBuckets are vllm:time_to_first_token_seconds' boundaries.
	ttftBuckets = []float64{
		0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0,
		2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0,
	}
	// itlBuckets are vllm:inter_token_latency_seconds' boundaries, also used
	// by vllm:request_time_per_output_token_seconds.
	itlBuckets = []float64{
		0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0,
		2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0,
	}
	// requestLatencyBuckets are vLLM's "request_latency" boundaries used by
	// e2e, queue, prefill, decode and inference time histograms.
	requestLatencyBuckets = []float64{
		0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0,
		50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0,
	}
	// fineBuckets cover quantities vLLM has no histogram for (HTTP phases,
	// schedule lag): a 1-2.5-5 ladder from 100µs to 100s.
	fineBuckets = []float64{
		0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
		0.1, 0.25, 0.5, 1, 2.5, 5, 10, 25, 50, 100,
	}
)

// Native histogram settings shared by every latency histogram: a growth
// factor of 1.1 (schema 3) keeps relative error near 5%; at most 160 buckets
// per series, after which the resolution halves, and a reset at most hourly.
//
// Exemplars: a Prometheus ingests those newer than the last it stored, so
// an exemplar matters until the next scrape only. client_golang frees none
// on its own: a histogram holds nativeMaxExemplars (~285 bytes each) once
// it had as many observations, and the TTL only decides which one a new
// exemplar replaces: one older than the TTL, else the older of the two
// closest in value, which keeps a slow request's. A TTL of the longest
// scrape interval we plan for (2 minutes) replaces only exemplars every
// scraper has read; 4 hold a 1-minute interval of a lean pair (0.05
// req/s) whole and the spread, slowest included, of a 2-minute one
// (docs/design.md, "Exemplars"; TestNativeExemplarsKeepTheTail).
const (
	nativeBucketFactor    = 1.1
	nativeMaxBucketNumber = 160
	nativeMinResetPeriod  = time.Hour
	nativeMaxExemplars    = 4
	nativeExemplarTTL     = 2 * time.Minute
)

// withThresholds returns base plus every positive SLO threshold, sorted and
// without duplicates, so a threshold is always an exact bucket boundary and
// "fraction of requests under the SLO" is a plain bucket ratio.
func withThresholds(base []float64, thresholds ...model.Duration) []float64 {
	out := slices.Clone(base)
	for _, t := range thresholds {
		if s := time.Duration(t).Seconds(); s > 0 {
			out = append(out, s)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// MaxClassicBuckets bounds the classic buckets (+Inf aside) of any latency
// histogram, whatever the number of probes: vLLM's boundaries for the
// quantity (at most 22, TTFT's) plus the pair's own SLO threshold for it.
const MaxClassicBuckets = 23

// thresholds holds the SLO thresholds a pair's histograms get as extra
// bucket boundaries: those of the pair's own probe only, so the size of a
// histogram does not grow with the number of probes (a union over the
// config made every series carry every probe's thresholds: megabytes of
// /metrics for a few hundred probes). vLLM's boundaries are shared by every
// pair, so sum by (le) across probes stays exact at those; at a
// threshold only its probe has, such a sum is low until the next shared
// boundary (histogram_quantile corrects the monotonicity, so a quantile
// still lands in the right vLLM bucket).
type thresholds struct {
	ttft, tpot, e2el, ttfa []model.Duration
}

// probeThresholds returns the SLO thresholds of p.
func probeThresholds(p config.Probe) thresholds {
	var th thresholds
	th.ttft = appendThreshold(th.ttft, p.SLO.TTFT)
	th.tpot = appendThreshold(th.tpot, p.SLO.TPOT)
	th.e2el = appendThreshold(th.e2el, p.SLO.E2EL)
	th.ttfa = appendThreshold(th.ttfa, p.SLO.TTFA)
	return th
}

func appendThreshold(ts []model.Duration, d model.Duration) []model.Duration {
	if d <= 0 || slices.Contains(ts, d) {
		return ts
	}
	ts = append(ts, d)
	slices.Sort(ts)
	return ts
}

func (t thresholds) equal(o thresholds) bool {
	return slices.Equal(t.ttft, o.ttft) && slices.Equal(t.tpot, o.tpot) && slices.Equal(t.e2el, o.e2el) && slices.Equal(t.ttfa, o.ttfa)
}

// histogramShape is everything a pair's histogram series depend on: the
// thresholds in their buckets and the probe's selection (which histograms,
// classic buckets or native only). A pair whose shape changes gets new
// histograms.
type histogramShape struct {
	th  thresholds
	sel config.HistogramSelection
}

func probeShape(p config.Probe) histogramShape {
	return histogramShape{th: probeThresholds(p), sel: p.HistogramSelection()}
}

func (s histogramShape) equal(o histogramShape) bool {
	return s.th.equal(o.th) && s.sel.Classic == o.sel.Classic && slices.Equal(s.sel.Names, o.sel.Names)
}
