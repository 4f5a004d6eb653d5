// Package svgchart draws small line charts and stacked bars as inline SVG,
// for the status page and for bench and capacity reports. It is hand
// written rather than gonum/plot because a status page draws four charts
// per (target, probe) pair and refreshes every 5 seconds: gonum/plot's SVG
// of one small chart is about 9 KB, these are 1-3 KB, scale with the
// viewport (viewBox, no fixed size) and need no fonts (docs/design.md,
// section "Status page").
package svgchart

import (
	"fmt"
	"html"
	"io"
	"math"
	"strings"
	"time"
	"unicode/utf8"
)

// Point is one data point; NaN Y leaves a gap in the line.
type Point struct{ X, Y float64 }

// Series is one line of a chart.
type Series struct {
	Name   string
	Color  string
	Points []Point
	Dashed bool
	// Markers draws a dot at every point (sparse data, such as the
	// levels of a capacity run).
	Markers bool
}

// Rule is a horizontal (Y set) or vertical (X set) reference line, such as
// an SLO threshold or an objective.
type Rule struct {
	Name     string
	Color    string
	Value    float64
	Vertical bool
}

// Mark is a labelled cross at a point, such as a failed capacity level
// with its reason; Label also becomes the mark's tooltip.
type Mark struct {
	X, Y  float64
	Label string
}

// Chart is a line chart. A zero YMax scales to the data and rules.
type Chart struct {
	Title          string
	XLabel, YLabel string
	Width, Height  int // viewBox size; 0 = 320x140
	Series         []Series
	Rules          []Rule
	Marks          []Mark
	// MarkName is the legend entry of the marks, when there are any.
	MarkName   string
	XMin, XMax float64 // both 0: the data's range
	YMin, YMax float64 // YMax 0: the data's maximum (YMin stays)
	// XTime formats X ticks as UTC clock times (X in Unix seconds).
	XTime bool
	// YFormat formats Y ticks; nil formats plain numbers.
	YFormat func(float64) string
}

// markColor draws marks: they flag failures.
const markColor = "#d62728"

// Margins of the plot area inside the viewBox.
const (
	marginLeft   = 46
	marginRight  = 8
	marginTop    = 16
	marginBottom = 30
	fontSize     = 10
	legendRow    = 12
)

// frame maps data to viewBox coordinates.
type frame struct {
	x0, x1, y0, y1 float64 // data ranges
	left, top      float64
	w, h           float64 // plot area
}

func (f frame) px(x float64) float64 { return f.left + (x-f.x0)/(f.x1-f.x0)*f.w }
func (f frame) py(y float64) float64 { return f.top + f.h - (y-f.y0)/(f.y1-f.y0)*f.h }

// WriteDocument writes a standalone SVG file of the charts stacked top to
// bottom, each at its own size.
func WriteDocument(w io.Writer, charts ...Chart) error {
	width, height := 0, 0
	for _, c := range charts {
		w, h := c.size()
		width, height = max(width, w), height+h
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<?xml version="1.0" encoding="UTF-8"?>`+"\n"+`<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d"><rect width="100%%" height="100%%" fill="white"/>`, width, height, width, height)
	y := 0
	for _, c := range charts {
		fmt.Fprintf(&b, `<g transform="translate(0 %d)">`, y)
		if err := c.Write(&b); err != nil {
			return err
		}
		b.WriteString(`</g>`)
		_, h := c.size()
		y += h
	}
	b.WriteString(`</svg>`)
	_, err := io.WriteString(w, b.String())
	return err
}

// Write writes the chart as one <svg> element.
func (c Chart) Write(w io.Writer) error {
	width, height := c.size()
	legend := c.legendEntries()
	cols := legendColumns(width, legend)
	rows := (len(legend) + cols - 1) / cols
	f := c.frame(float64(width), float64(height-rows*legendRow))
	var b strings.Builder
	// width and height give the size in a standalone document; a page's
	// CSS scales the chart to its box.
	fmt.Fprintf(&b, `<svg class="chart" xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="%d" role="img">`, width, height, width, height, fontSize)
	fmt.Fprintf(&b, `<title>%s</title>`, html.EscapeString(c.Title))
	fmt.Fprintf(&b, `<text x="%d" y="11" font-weight="bold">%s</text>`, marginLeft, html.EscapeString(c.Title))
	c.writeAxes(&b, f)
	for _, r := range c.Rules {
		x0, y0, x1, y1 := f.left, f.py(r.Value), f.left+f.w, f.py(r.Value)
		if r.Vertical {
			x0, y0, x1, y1 = f.px(r.Value), f.top, f.px(r.Value), f.top+f.h
		}
		fmt.Fprintf(&b, `<path class="rule" d="M%s %sL%s %s" stroke="%s" stroke-dasharray="4 3"><title>%s</title></path>`,
			num(x0), num(y0), num(x1), num(y1), r.Color, html.EscapeString(r.Name))
	}
	for _, s := range c.Series {
		writeSeries(&b, f, s)
	}
	for _, m := range c.Marks {
		x, y := f.px(m.X), f.py(m.Y)
		fmt.Fprintf(&b, `<path class="mark" d="M%s %sl8 8m0-8l-8 8" stroke="%s" stroke-width="1.5"><title>%s</title></path>`,
			num(x-4), num(y-4), markColor, html.EscapeString(m.Label))
		if m.Label != "" {
			// Right of the mark, or left of it in the right half, so the
			// label stays inside the chart.
			tx, anchor := x+5, "start"
			if x > f.left+f.w/2 {
				tx, anchor = x-5, "end"
			}
			fmt.Fprintf(&b, `<text x="%s" y="%s" fill="%s" font-size="8" text-anchor="%s">%s</text>`, num(tx), num(y-5), markColor, anchor, html.EscapeString(m.Label))
		}
	}
	writeLegend(&b, legend, float64(height-rows*legendRow), float64(width), cols)
	b.WriteString(`</svg>`)
	_, err := io.WriteString(w, b.String())
	return err
}

// size is the chart's viewBox size; 0 = 320x140.
func (c Chart) size() (width, height int) {
	if c.Width == 0 || c.Height == 0 {
		return 320, 140
	}
	return c.Width, c.Height
}

// frame computes the data ranges: the chart's, or the data's and rules'.
func (c Chart) frame(width, height float64) frame {
	x0, x1, y1 := math.Inf(1), math.Inf(-1), c.YMax
	for _, s := range c.Series {
		for _, p := range s.Points {
			x0, x1 = math.Min(x0, p.X), math.Max(x1, p.X)
			if c.YMax == 0 && !math.IsNaN(p.Y) {
				y1 = math.Max(y1, p.Y)
			}
		}
	}
	for _, m := range c.Marks {
		x0, x1 = math.Min(x0, m.X), math.Max(x1, m.X)
		if c.YMax == 0 {
			y1 = math.Max(y1, m.Y)
		}
	}
	for _, r := range c.Rules {
		if r.Vertical {
			x0, x1 = math.Min(x0, r.Value), math.Max(x1, r.Value)
		} else if c.YMax == 0 {
			y1 = math.Max(y1, r.Value)
		}
	}
	if c.XMin != 0 || c.XMax != 0 {
		x0, x1 = c.XMin, c.XMax
	}
	if math.IsInf(x0, 0) || x1 <= x0 {
		x0, x1 = 0, 1
	}
	if c.YMax == 0 {
		y1 = niceCeil(y1 * 1.05)
	}
	if y1 <= c.YMin {
		y1 = c.YMin + 1
	}
	top := float64(marginTop)
	if c.Title != "" && c.YLabel != "" {
		// The title's line is the top margin's; the Y label goes on a line
		// of its own below it, above the plot.
		top += fontSize + 2
	}
	return frame{x0: x0, x1: x1, y0: c.YMin, y1: y1, left: marginLeft, top: top,
		w: width - marginLeft - marginRight, h: height - top - marginBottom}
}

func (c Chart) writeAxes(b *strings.Builder, f frame) {
	fmt.Fprintf(b, `<path d="M%s %sV%sH%s" stroke="#888" fill="none"/>`, num(f.left), num(f.top), num(f.top+f.h), num(f.left+f.w))
	yf := c.YFormat
	if yf == nil {
		yf = FormatNumber
	}
	for i := range 3 {
		v := f.y0 + (f.y1-f.y0)*float64(i)/2
		y := f.py(v)
		fmt.Fprintf(b, `<path d="M%s %sH%s" stroke="#eee"/><text x="%s" y="%s" text-anchor="end">%s</text>`,
			num(f.left+1), num(y), num(f.left+f.w), num(f.left-3), num(y+3), html.EscapeString(yf(v)))
	}
	for _, v := range c.xTicks(f) {
		label := FormatNumber(v)
		if c.XTime {
			label = time.Unix(int64(math.Round(v)), 0).UTC().Format("15:04")
		}
		anchor := "middle"
		if f.px(v) > f.left+f.w-15 {
			anchor = "end" // inside the viewBox
		}
		fmt.Fprintf(b, `<text x="%s" y="%s" text-anchor="%s">%s</text>`, num(f.px(v)), num(f.top+f.h+11), anchor, label)
	}
	if c.XLabel != "" {
		fmt.Fprintf(b, `<text x="%s" y="%s" text-anchor="middle" fill="#555">%s</text>`, num(f.left+f.w/2), num(f.top+f.h+23), html.EscapeString(c.XLabel))
	}
	if c.YLabel != "" {
		fmt.Fprintf(b, `<text x="0" y="%s" fill="#555">%s</text>`, num(f.top-4), html.EscapeString(c.YLabel))
	}
}

// xTicks returns the X tick values: the range in thirds on a time axis
// (clock times read at any value), else multiples of a round step.
func (c Chart) xTicks(f frame) []float64 {
	var ticks []float64
	if c.XTime {
		for i := range 4 {
			ticks = append(ticks, f.x0+(f.x1-f.x0)*float64(i)/3)
		}
		return ticks
	}
	step := niceStep((f.x1 - f.x0) / 5)
	for v := math.Ceil(f.x0/step) * step; v <= f.x1+step/1e6; v += step {
		ticks = append(ticks, v)
	}
	return ticks
}

// writeSeries draws a line, broken at NaN values, and its markers.
func writeSeries(b *strings.Builder, f frame, s Series) {
	var d, dots strings.Builder
	pen := "M"
	for i, p := range s.Points {
		if math.IsNaN(p.Y) {
			pen = "M"
			continue
		}
		x, y := num(f.px(p.X)), num(f.py(math.Min(p.Y, f.y1)))
		fmt.Fprintf(&d, "%s%s %s", pen, x, y)
		if pen == "M" && (i+1 == len(s.Points) || math.IsNaN(s.Points[i+1].Y)) {
			// A lone point draws no line: mark it.
			fmt.Fprintf(&dots, `<circle class="dot" cx="%s" cy="%s" r="2" fill="%s"/>`, x, y, s.Color)
		}
		pen = "L"
	}
	if d.Len() == 0 {
		return
	}
	dash := ""
	if s.Dashed {
		dash = ` stroke-dasharray="5 3"`
	}
	fmt.Fprintf(b, `<path class="series" d="%s" stroke="%s" stroke-width="1.5" fill="none"%s><title>%s</title></path>`,
		d.String(), s.Color, dash, html.EscapeString(s.Name))
	b.WriteString(dots.String())
	if !s.Markers {
		return
	}
	for _, p := range s.Points {
		if !math.IsNaN(p.Y) {
			fmt.Fprintf(b, `<circle cx="%s" cy="%s" r="2.5" fill="%s"/>`, num(f.px(p.X)), num(f.py(math.Min(p.Y, f.y1))), s.Color)
		}
	}
}

type legendEntry struct{ name, color string }

func (c Chart) legendEntries() []legendEntry {
	var out []legendEntry
	for _, s := range c.Series {
		out = append(out, legendEntry{s.Name, s.Color})
	}
	for _, r := range c.Rules {
		out = append(out, legendEntry{r.Name, r.Color})
	}
	if len(c.Marks) > 0 && c.MarkName != "" {
		out = append(out, legendEntry{c.MarkName, markColor})
	}
	return out
}

// legendColumns is how many legend entries fit side by side: each column
// is as wide as the longest entry (about 6 units per character at the
// chart's font size, plus the swatch), at least 120.
func legendColumns(width int, entries []legendEntry) int {
	col := 120
	for _, e := range entries {
		col = max(col, 6*utf8.RuneCountInString(e.name)+20)
	}
	return max(1, (width-marginLeft)/col)
}

// writeLegend lays the entries out in rows below the plot.
func writeLegend(b *strings.Builder, entries []legendEntry, top, width float64, cols int) {
	col := (width - marginLeft) / float64(cols)
	for i, e := range entries {
		x, y := marginLeft+float64(i%cols)*col, top+float64(i/cols)*legendRow+8
		fmt.Fprintf(b, `<path d="M%s %sh10" stroke="%s" stroke-width="2"/><text x="%s" y="%s">%s</text>`,
			num(x), num(y-3), e.color, num(x+13), num(y), html.EscapeString(e.name))
	}
}
