package bench

import (
	"fmt"
	"image/color"
	"io"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/vllm-prober/vllm-prober/bench/capacity"
	"github.com/vllm-prober/vllm-prober/bench/pyfmt"
)

// Chart colours: throughput blue, goodput green, pass line grey, rated
// capacity red.
var (
	colThroughput = color.RGBA{R: 31, G: 119, B: 180, A: 255}
	colGoodput    = color.RGBA{R: 44, G: 160, B: 44, A: 255}
	colPassLine   = color.RGBA{R: 127, G: 127, B: 127, A: 255}
	colRated      = color.RGBA{R: 214, G: 39, B: 40, A: 255}
)

// levelMeans averages the repeats of each offered rate, sorted by rate.
func levelMeans(s *capacity.Search, value func(capacity.Repeat) float64) plotter.XYs {
	sum, n := map[float64]float64{}, map[float64]int{}
	for _, r := range s.Repeats {
		sum[r.Rate] += value(r)
		n[r.Rate]++
	}
	rates := make([]float64, 0, len(sum))
	for r := range sum {
		rates = append(rates, r)
	}
	slices.Sort(rates)
	xys := make(plotter.XYs, len(rates))
	for i, r := range rates {
		xys[i] = plotter.XY{X: r, Y: sum[r] / float64(n[r])}
	}
	return xys
}

// chartCurves returns the completed throughput and the goodput of each
// level, both per second of the repeats' wall-clock windows (first send to
// last terminal response): past saturation the completed curve flattens at
// what the server can finish instead of following the offered load.
func chartCurves(s *capacity.Search) (completed, goodput plotter.XYs) {
	return levelMeans(s, func(r capacity.Repeat) float64 { return r.Metrics.CompletedThroughput }),
		levelMeans(s, func(r capacity.Repeat) float64 { return r.Metrics.Goodput })
}

// writeChartSVG draws goodput and completed throughput (chartCurves) against
// offered load (means of the repeats, failing repeats marked with a cross), the pass
// line goodput = MinAcceptance x offered, and the rated capacity, as SVG.
func writeChartSVG(w io.Writer, s *capacity.Search, rule capacity.PassRule, title string) error {
	return writeChart(w, s, rule, title, "svg")
}

// writeChart renders the chart in format (any of gonum/plot's).
func writeChart(w io.Writer, s *capacity.Search, rule capacity.PassRule, title, format string) error {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "offered load (req/s)"
	p.Y.Label.Text = "req/s"
	p.Legend.Top, p.Legend.Left = true, true
	p.Add(plotter.NewGrid())
	maxX, maxY := 0.0, 0.0
	for _, r := range s.Repeats {
		maxX, maxY = max(maxX, r.Rate), max(maxY, r.Rate, r.Metrics.CompletedThroughput, r.Metrics.Goodput)
	}
	maxY *= 1.4 // room for the legend above the curves
	completed, goodput := chartCurves(s)
	if err := addCurve(p, "completed/s (wall clock)", completed, colThroughput, draw.CircleGlyph{}); err != nil {
		return err
	}
	if err := addCurve(p, "goodput/s (accepted)", goodput, colGoodput, draw.SquareGlyph{}); err != nil {
		return err
	}
	if err := addFailures(p, s); err != nil {
		return err
	}
	pass, err := plotter.NewLine(plotter.XYs{{X: 0, Y: 0}, {X: maxX, Y: maxX * rule.MinAcceptance}})
	if err != nil {
		return fmt.Errorf("chart pass line: %w", err)
	}
	pass.Color, pass.Dashes = colPassLine, []vg.Length{vg.Points(4), vg.Points(3)}
	p.Add(pass)
	p.Legend.Add(fmt.Sprintf("pass line: goodput = %s x offered", pyfmt.Float(rule.MinAcceptance, 2)), pass)
	if s.Rated > 0 {
		rated, err := plotter.NewLine(plotter.XYs{{X: s.Rated, Y: 0}, {X: s.Rated, Y: maxY}})
		if err != nil {
			return fmt.Errorf("chart rated line: %w", err)
		}
		rated.Color, rated.Width = colRated, vg.Points(1.5)
		p.Add(rated)
		p.Legend.Add(fmt.Sprintf("rated capacity %s req/s", pyfmt.Float(s.Rated, 2)), rated)
	}
	p.X.Min, p.Y.Min, p.Y.Max = 0, 0, maxY
	wt, err := p.WriterTo(8*vg.Inch, 5*vg.Inch, format)
	if err != nil {
		return fmt.Errorf("render chart: %w", err)
	}
	if _, err := wt.WriteTo(w); err != nil {
		return fmt.Errorf("write chart: %w", err)
	}
	return nil
}

// addCurve adds a line with points and its legend entry.
func addCurve(p *plot.Plot, name string, xys plotter.XYs, c color.Color, g draw.GlyphDrawer) error {
	l, pts, err := plotter.NewLinePoints(xys)
	if err != nil {
		return fmt.Errorf("chart %s: %w", name, err)
	}
	l.Color, pts.Color, pts.Shape = c, c, g
	p.Add(l, pts)
	p.Legend.Add(name, l, pts)
	return nil
}

// addFailures marks the goodput of each failing repeat with a red cross.
func addFailures(p *plot.Plot, s *capacity.Search) error {
	var xys plotter.XYs
	for _, r := range s.Repeats {
		if !r.Pass {
			xys = append(xys, plotter.XY{X: r.Rate, Y: r.Metrics.Goodput})
		}
	}
	if len(xys) == 0 {
		return nil
	}
	sc, err := plotter.NewScatter(xys)
	if err != nil {
		return fmt.Errorf("chart failures: %w", err)
	}
	sc.Color, sc.Shape, sc.Radius = colRated, draw.CrossGlyph{}, vg.Points(4)
	p.Add(sc)
	p.Legend.Add("failing repeat (goodput)", sc)
	return nil
}
