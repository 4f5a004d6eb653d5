// Package plot draws bench's SVG reports: the --plot distributions and
// requests over time of one run, and the capacity staircase's chart.
package plot

import (
	"fmt"
	"io"
	"math"
	"slices"
	"time"

	"github.com/vllm-prober/vllm-prober/bench/openloop"
	"github.com/vllm-prober/vllm-prober/bench/pyfmt"
	"github.com/vllm-prober/vllm-prober/bench/stats"
	"github.com/vllm-prober/vllm-prober/internal/quantile"
	"github.com/vllm-prober/vllm-prober/internal/svgchart"
	"github.com/vllm-prober/vllm-prober/probe"
)

// Bounds on the points a plot draws, whatever the number of requests.
const (
	cdfPoints  = 200
	timeBinsAt = 120
)

// colOffered draws offered load over time.
const colOffered = "#7f7f7f"

// Run writes bench's --plot SVG: the distributions (cumulative, in
// percent of samples) of TTFT and ITL of the completed requests, the
// samples Compute reports percentiles of, and requests over time:
// offered by planned time, completed, accepted and failed by end time.
func Run(w io.Writer, run *openloop.Run, title string) error {
	var ttft, itl []float64
	for _, r := range run.Results {
		if !stats.Completed(r) {
			continue
		}
		ttft = append(ttft, stats.Milliseconds(r.TTFT))
		for _, d := range r.ITLs {
			itl = append(itl, stats.Milliseconds(d))
		}
	}
	charts := []svgchart.Chart{
		cdfChart(title+": TTFT distribution", "TTFT (ms)", ttft, colThroughput),
		cdfChart(title+": ITL distribution", "ITL (ms)", itl, colLatency),
		overTimeChart(run),
	}
	if err := svgchart.WriteDocument(w, charts...); err != nil {
		return fmt.Errorf("write plot: %w", err)
	}
	return nil
}

// cdfChart draws the cumulative distribution of samples (ms) with its
// median and p99 marked.
func cdfChart(title, xLabel string, samples []float64, color string) svgchart.Chart {
	sorted := slices.Sorted(slices.Values(samples))
	c := svgchart.Chart{Title: fmt.Sprintf("%s (%d samples)", title, len(sorted)), XLabel: xLabel, YLabel: "% ≤",
		Width: chartWidth, Height: detailChartHeight, YMax: 100,
		Series: []svgchart.Series{{Name: "cumulative %", Color: color, Points: cdf(sorted, cdfPoints)}}}
	if len(sorted) > 0 {
		c.XMin, c.XMax = 0, sorted[len(sorted)-1]
		for _, q := range []float64{50, 99} {
			v := quantile.LinearInterpolated(sorted, q/100)
			c.Rules = append(c.Rules, svgchart.Rule{Name: fmt.Sprintf("p%s %.1f ms", pyfmt.Percentile(q), v), Color: colPassLine, Value: v, Vertical: true})
		}
	}
	return c
}

// cdf returns at most n+1 points (x, percent of samples ≤ x) of sorted,
// the samples at evenly spaced ranks, first and last included.
func cdf(sorted []float64, n int) []svgchart.Point {
	if len(sorted) == 0 {
		return nil
	}
	var pts []svgchart.Point
	last := -1
	for i := 0; i <= n; i++ {
		k := int(math.Round(float64(i) / float64(n) * float64(len(sorted)-1)))
		// Ties: the share at or below the value, so a step is drawn at
		// its top.
		k = max(k, lastIndexOf(sorted, sorted[k]))
		if k == last {
			continue
		}
		last = k
		pts = append(pts, svgchart.Point{X: sorted[k], Y: 100 * float64(k+1) / float64(len(sorted))})
	}
	return pts
}

func lastIndexOf(sorted []float64, v float64) int {
	i, _ := slices.BinarySearch(sorted, math.Nextafter(v, math.Inf(1)))
	return i - 1
}

// Bins counts requests per bin of width over the run: offered by
// planned time, completed (vLLM's successful), accepted and failed by end
// time. Bins are per second, wider when the run is longer than
// timeBinsAt seconds; the last one ends with the run, so it may be
// narrower (last).
type Bins struct {
	width, last                          time.Duration
	Offered, Completed, Accepted, Failed []int
}

// binWidth is bin i's real width, so its rate is its count over it.
func (b Bins) binWidth(i int) time.Duration {
	if i == len(b.Offered)-1 {
		return b.last
	}
	return b.width
}

// BinRun counts run's requests into Bins.
func BinRun(run *openloop.Run) Bins {
	span := run.End.Sub(run.Start)
	width := time.Second
	for span > time.Duration(timeBinsAt)*width {
		width *= 2
	}
	n := max(int((span+width-1)/width), 1)
	last := span - time.Duration(n-1)*width
	if last <= 0 { // an empty run
		last = width
	}
	b := Bins{width: width, last: last, Offered: make([]int, n), Completed: make([]int, n), Accepted: make([]int, n), Failed: make([]int, n)}
	bin := func(t time.Time) int { return min(max(int(t.Sub(run.Start)/width), 0), n-1) }
	for i, r := range run.Results {
		b.Offered[bin(r.Scheduled)]++
		if i >= len(run.Ended) {
			continue
		}
		end := bin(run.Ended[i])
		switch {
		case r.Disposition == probe.Accepted:
			b.Accepted[end]++
			b.Completed[end]++
		case stats.Completed(r):
			b.Completed[end]++
		default:
			b.Failed[end]++
		}
	}
	return b
}

// overTimeChart draws requests per second over the run.
func overTimeChart(run *openloop.Run) svgchart.Chart {
	b := BinRun(run)
	perSec := func(counts []int) []svgchart.Point {
		pts := make([]svgchart.Point, len(counts))
		for i, n := range counts {
			pts[i] = svgchart.Point{X: (time.Duration(i) * b.width).Seconds(), Y: float64(n) / b.binWidth(i).Seconds()}
		}
		return pts
	}
	return svgchart.Chart{Title: fmt.Sprintf("Requests over time (per %s bin)", b.width), XLabel: "seconds since start", YLabel: "req/s",
		Width: chartWidth, Height: detailChartHeight + 40,
		Series: []svgchart.Series{
			{Name: "offered (planned time)", Color: colOffered, Points: perSec(b.Offered), Dashed: true},
			{Name: "completed", Color: colThroughput, Points: perSec(b.Completed)},
			{Name: "accepted", Color: colGoodput, Points: perSec(b.Accepted)},
			{Name: "failed (not completed)", Color: colRated, Points: perSec(b.Failed)},
		}}
}
