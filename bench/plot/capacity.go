package plot

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/vllm-prober/vllm-prober/bench/capacity"
	"github.com/vllm-prober/vllm-prober/bench/pyfmt"
	"github.com/vllm-prober/vllm-prober/bench/stats"
	"github.com/vllm-prober/vllm-prober/internal/svgchart"
)

// Chart colours: throughput blue, goodput green, pass line grey, rated
// capacity and SLOs red.
const (
	colThroughput = "#1f77b4"
	colGoodput    = "#2ca02c"
	colPassLine   = "#7f7f7f"
	colRated      = "#d62728"
	colLatency    = "#9467bd"
)

// Report chart sizes (SVG user units, about pixels).
const (
	chartWidth        = 800
	mainChartHeight   = 420
	detailChartHeight = 240
)

// levelMeans averages the repeats of each offered rate, sorted by rate;
// a level whose value is NaN in every repeat is left out.
func levelMeans(s *capacity.Search, value func(capacity.Repeat) float64) []svgchart.Point {
	sum, n := map[float64]float64{}, map[float64]int{}
	for _, r := range s.Repeats {
		if v := value(r); !math.IsNaN(v) {
			sum[r.Rate] += v
			n[r.Rate]++
		}
	}
	rates := make([]float64, 0, len(sum))
	for r := range sum {
		rates = append(rates, r)
	}
	slices.Sort(rates)
	pts := make([]svgchart.Point, len(rates))
	for i, r := range rates {
		pts[i] = svgchart.Point{X: r, Y: sum[r] / float64(n[r])}
	}
	return pts
}

// CapacityCurves returns the completed throughput and the goodput of each
// level, both per second of the repeats' wall-clock windows (first send to
// last terminal response): past saturation the completed curve flattens at
// what the server can finish instead of following the offered load.
func CapacityCurves(s *capacity.Search) (completed, goodput []svgchart.Point) {
	return levelMeans(s, func(r capacity.Repeat) float64 { return r.Metrics.CompletedThroughput }),
		levelMeans(s, func(r capacity.Repeat) float64 { return r.Metrics.Goodput })
}

// Capacity writes the capacity report's SVG: goodput and completed
// throughput (CapacityCurves) against offered load with the pass line
// goodput = MinAcceptance x offered and the rated capacity, each failing
// level marked with its reasons; then the rule's latency percentile of
// TTFT, TPOT and E2EL against offered load with the SLO of each.
func Capacity(w io.Writer, s *capacity.Search, rule capacity.PassRule, title string) error {
	charts := []svgchart.Chart{throughputChart(s, rule, title)}
	for _, m := range []struct {
		name string
		slo  time.Duration
	}{{stats.MetricTTFT, rule.TTFT}, {stats.MetricTPOT, rule.TPOT}, {stats.MetricE2EL, rule.E2EL}} {
		if c, ok := latencyChart(s, rule.Percentile, m.name, m.slo); ok {
			charts = append(charts, c)
		}
	}
	if err := svgchart.WriteDocument(w, charts...); err != nil {
		return fmt.Errorf("write chart: %w", err)
	}
	return nil
}

// throughputChart draws the plateau: completed/s and goodput/s against
// offered load.
func throughputChart(s *capacity.Search, rule capacity.PassRule, title string) svgchart.Chart {
	maxX := 0.0
	for _, r := range s.Repeats {
		maxX = max(maxX, r.Rate)
	}
	completed, goodput := CapacityCurves(s)
	c := svgchart.Chart{Title: title, XLabel: "offered load (req/s)", YLabel: "req/s", Width: chartWidth, Height: mainChartHeight,
		XMin: 0, XMax: maxX, MarkName: "failing repeat (goodput) and why",
		Series: []svgchart.Series{
			{Name: "completed/s (wall clock)", Color: colThroughput, Points: completed, Markers: true},
			{Name: "goodput/s (accepted)", Color: colGoodput, Points: goodput, Markers: true},
			{Name: fmt.Sprintf("pass line: goodput = %s x offered", pyfmt.Float(rule.MinAcceptance, 2)), Color: colPassLine, Dashed: true,
				Points: []svgchart.Point{{X: 0, Y: 0}, {X: maxX, Y: maxX * rule.MinAcceptance}}},
		},
		Marks: failureMarks(s, func(r capacity.Repeat) float64 { return r.Metrics.Goodput }),
	}
	if s.Rated > 0 {
		c.Rules = []svgchart.Rule{{Name: fmt.Sprintf("rated capacity %s req/s", pyfmt.Float(s.Rated, 2)), Color: colRated, Value: s.Rated, Vertical: true}}
	}
	return c
}

// latencyChart draws percentile p of a latency metric against offered
// load with its SLO; ok is false when no level measured it.
func latencyChart(s *capacity.Search, p float64, name string, slo time.Duration) (svgchart.Chart, bool) {
	value := func(r capacity.Repeat) float64 { return r.Metrics.LatencyPercentile(name, p) }
	pts := levelMeans(s, value)
	if len(pts) == 0 {
		return svgchart.Chart{}, false
	}
	label := fmt.Sprintf("p%s %s (ms)", pyfmt.Percentile(p), name)
	c := svgchart.Chart{Title: label + " against offered load", XLabel: "offered load (req/s)", YLabel: "ms",
		Width: chartWidth, Height: detailChartHeight, MarkName: "failing repeat",
		Series: []svgchart.Series{{Name: label, Color: colLatency, Points: pts, Markers: true}},
		Marks:  failureMarks(s, value),
	}
	c.XMin, c.XMax = 0, pts[len(pts)-1].X
	if slo > 0 {
		c.Rules = []svgchart.Rule{{Name: fmt.Sprintf("SLO %s", slo), Color: colRated, Value: stats.Milliseconds(slo)}}
	}
	return c, true
}

// failureMarks marks each failing repeat at value, labelled with its
// reasons; repeats of one level that failed for the same reasons share a
// label.
func failureMarks(s *capacity.Search, value func(capacity.Repeat) float64) []svgchart.Mark {
	var marks []svgchart.Mark
	labelled := map[string]bool{}
	for _, r := range s.Repeats {
		y := value(r)
		if r.Pass || math.IsNaN(y) {
			continue
		}
		why := strings.Join(r.Why, "; ")
		if why == "" {
			why = "failed"
		}
		key := fmt.Sprint(r.Rate, why)
		if labelled[key] {
			why = ""
		}
		labelled[key] = true
		marks = append(marks, svgchart.Mark{X: r.Rate, Y: y, Label: why})
	}
	return marks
}
