package server

import (
	"math"
	"slices"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/vllm-prober/vllm-prober/collector/metricname"
	"github.com/vllm-prober/vllm-prober/internal/quantile"
)

// scrapedTTFTName is the server's TTFT histogram, which the /pair page
// compares with the client's TTFT (docs/design.md, Status page).
const scrapedTTFTName = metricname.VLLMTimeToFirstToken

// serverModelLabel is the model label of vLLM's series.
const serverModelLabel = "model_name"

// ttftHistorySpan is how long a target's TTFT histograms are kept: the
// status page's windows are shorter.
const ttftHistorySpan = time.Hour

// maxTTFTSnapshots bounds the snapshots kept per target whatever the
// scrape interval.
const maxTTFTSnapshots = 4096

// ttftSnapshot is the server's TTFT histogram of every model at one
// successful scrape, summed over the model's engines.
type ttftSnapshot struct {
	at      time.Time
	byModel map[string][]quantile.Bucket // cumulative, ending with +Inf
}

// recordTTFT keeps the TTFT histograms of a successful scrape that ended
// at; l's fields are guarded by ServerScraper.mu, which is held.
func (l *targetLoop) recordTTFT(at time.Time) {
	snap := ttftSnapshot{at: at, byModel: map[string][]quantile.Bucket{}}
	for _, f := range l.families {
		if f.name != scrapedTTFTName || f.typ != dto.MetricType_HISTOGRAM {
			continue
		}
		for _, m := range f.metrics {
			b, ok := scrapedBuckets(m.GetHistogram())
			if !ok {
				continue
			}
			// A model served by several engines (the engine label) has a
			// series per engine: they are summed, as sum by (le) would.
			model := labelValue(m, serverModelLabel)
			if prev, seen := snap.byModel[model]; seen && sameBounds(prev, b) {
				for i := range b {
					b[i].Count += prev[i].Count
				}
			}
			snap.byModel[model] = b
		}
	}
	i := 0
	for i < len(l.ttft) && (l.ttft[i].at.Before(at.Add(-ttftHistorySpan)) || len(l.ttft)-i >= maxTTFTSnapshots) {
		i++
	}
	l.ttft = append(slices.Delete(l.ttft, 0, i), snap)
}

// ofModel returns the buckets of model, which may be a discovered model
// id that serverLabel shortened.
func (snap ttftSnapshot) ofModel(model string) ([]quantile.Bucket, bool) {
	if b, ok := snap.byModel[model]; ok {
		return b, true
	}
	for m, b := range snap.byModel {
		if serverLabel(m) == model {
			return b, true
		}
	}
	return nil, false
}

// scrapedBuckets returns h's cumulative buckets ending with +Inf (the
// count), or false for a histogram without classic buckets.
func scrapedBuckets(h *dto.Histogram) ([]quantile.Bucket, bool) {
	if len(h.GetBucket()) == 0 {
		return nil, false
	}
	out := make([]quantile.Bucket, 0, len(h.GetBucket())+1)
	for _, b := range h.GetBucket() {
		out = append(out, quantile.Bucket{UpperBound: b.GetUpperBound(), Count: float64(b.GetCumulativeCount())})
	}
	if !math.IsInf(out[len(out)-1].UpperBound, 1) {
		out = append(out, quantile.Bucket{UpperBound: math.Inf(1), Count: float64(h.GetSampleCount())})
	}
	return out, true
}

func labelValue(m *dto.Metric, name string) string {
	for _, lp := range m.GetLabel() {
		if lp.GetName() == name {
			return lp.GetValue()
		}
	}
	return ""
}

// ServerTTFT is the server's TTFT over a window, from its
// vllm:time_to_first_token_seconds histogram.
type ServerTTFT struct {
	// Model is the model_name the series was chosen by.
	Model string
	// Missing says why there are no numbers; "" when there are.
	Missing string
	// From and To are the first and last scrape inside the window: the
	// numbers cover the requests whose first token came between them.
	From, To time.Time
	// Count is the number of those requests.
	Count float64
	// P50 and P99 are interpolated in the buckets as PromQL's
	// histogram_quantile does.
	P50, P99 time.Duration
}

// Family is the scraped histogram the numbers come from.
func (ServerTTFT) Family() string { return scrapedTTFTName }

// ServerTTFT returns the TTFT of the model of target (or of its discovered
// replica, when replica is set) over the scrapes that
// ended in [since, until]: each bucket's increase between consecutive
// scrapes (a decrease is a counter reset: the new count is the increase),
// summed, then interpolated (docs/design.md, Status page).
func (s *ServerScraper) ServerTTFT(target, replica, model string, since, until time.Time) ServerTTFT {
	out := ServerTTFT{Model: model}
	s.mu.RLock()
	defer s.mu.RUnlock()
	l := s.loops[scrapeKey{target, replica}]
	switch {
	case l == nil || l.cfg.target.MetricsPath == "":
		out.Missing = "the target's server metrics are not scraped (no metrics_path)"
		return out
	case model == "":
		out.Missing = "the target's model is not known yet"
		return out
	}
	var sum []quantile.Bucket
	var prev []quantile.Bucket
	for _, snap := range l.ttft {
		if snap.at.Before(since) || snap.at.After(until) {
			continue
		}
		cur, ok := snap.ofModel(model)
		if ok && prev != nil && sameBounds(prev, cur) && (sum == nil || sameBounds(sum, cur)) {
			sum = addIncrease(sum, prev, cur)
			out.To = snap.at
		}
		if ok && out.From.IsZero() {
			out.From = snap.at
		}
		prev = cur
	}
	return finishServerTTFT(out, sum)
}

// finishServerTTFT computes the quantiles of the summed increases.
func finishServerTTFT(out ServerTTFT, sum []quantile.Bucket) ServerTTFT {
	if out.To.IsZero() {
		out.Missing = "fewer than two scrapes with a " + scrapedTTFTName + " series of this model in the window"
		return out
	}
	out.Count = sum[len(sum)-1].Count
	p50, ok50 := quantile.Histogram(0.5, sum)
	p99, ok99 := quantile.Histogram(0.99, sum)
	if !ok50 || !ok99 {
		out.Missing = "no request got its first token between the scrapes in the window"
		return out
	}
	out.P50 = time.Duration(p50 * float64(time.Second))
	out.P99 = time.Duration(p99 * float64(time.Second))
	return out
}

func sameBounds(a, b []quantile.Bucket) bool {
	return slices.EqualFunc(a, b, func(x, y quantile.Bucket) bool { return x.UpperBound == y.UpperBound })
}

// addIncrease adds each bucket's increase from prev to cur to sum (nil:
// a new sum with cur's bounds).
func addIncrease(sum, prev, cur []quantile.Bucket) []quantile.Bucket {
	if sum == nil {
		sum = make([]quantile.Bucket, len(cur))
		for i, b := range cur {
			sum[i].UpperBound = b.UpperBound
		}
	}
	for i, b := range cur {
		d := b.Count - prev[i].Count
		if d < 0 {
			d = b.Count
		}
		sum[i].Count += d
	}
	return sum
}
