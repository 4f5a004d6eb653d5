package status

import (
	"fmt"
	"html/template"
	"math"
	"strings"
	"time"

	"github.com/vllm-prober/vllm-prober/internal/svgchart"
	"github.com/vllm-prober/vllm-prober/probe"
)

// Chart colours, shared with the legend text of the disposition bar.
const (
	colP50       = "#1f77b4"
	colP99       = "#ff7f0e"
	colITL       = "#9467bd"
	colSLO       = "#d62728"
	colGoodput   = "#2ca02c"
	colObjective = "#7f7f7f"
)

// dispositionColors colour the disposition bar, in probe.Dispositions
// order.
var dispositionColors = map[probe.Disposition]string{
	probe.ServerFailure:  "#d62728",
	probe.ClientTimeout:  "#ff7f0e",
	probe.Cancelled:      "#8c564b",
	probe.QualityFailure: "#e377c2",
	probe.LatencyFailure: "#bcbd22",
	probe.Accepted:       "#2ca02c",
}

// chartSize is a chart's viewBox: small on the status page, large on the
// detail page.
type chartSize struct{ w, h int }

var (
	smallChart = chartSize{320, 130}
	largeChart = chartSize{560, 220}
)

// minFreshMinute is how long the current minute must have run before the
// charts draw it: its first seconds hold a handful of requests, and a
// line that drops at every new minute would read as an outage.
const minFreshMinute = 20 * time.Second

// minutesSeries returns one point per minute the pair ran, at the
// minute's start; a minute without a value (ok false) is a gap. The
// current minute is left out while younger than minFreshMinute, unless
// it holds the series' first value (a new pair's first minutes are gaps).
func minutesSeries(ms []MinuteStats, value func(MinuteStats) (float64, bool)) []svgchart.Point {
	var pts []svgchart.Point
	valued := false
	for i, m := range ms {
		if !m.Running {
			continue
		}
		if i == len(ms)-1 && m.Ran < minFreshMinute && valued {
			break
		}
		y, ok := value(m)
		if !ok {
			y = math.NaN()
		}
		valued = valued || ok
		pts = append(pts, svgchart.Point{X: float64(m.Start.Unix()), Y: y})
	}
	return pts
}

func msValue(get func(MinuteStats) time.Duration) func(MinuteStats) (float64, bool) {
	return func(m MinuteStats) (float64, bool) {
		d := get(m)
		return float64(d) / float64(time.Millisecond), d > 0
	}
}

// hourRange is the X range of the charts: the whole last hour, so every
// pair's charts share one time axis.
func hourRange(ms []MinuteStats) (float64, float64) {
	if len(ms) == 0 {
		return 0, 0
	}
	return float64(ms[0].Start.Unix()), float64(ms[len(ms)-1].Start.Unix())
}

// latencyChart draws TTFT p50/p99 and ITL p99 per minute with the TTFT
// and TPOT objectives (ITL is the per-token latency TPOT averages).
func latencyChart(p PairStats, size chartSize) svgchart.Chart {
	c := svgchart.Chart{Title: "TTFT and ITL (ms)", Width: size.w, Height: size.h, XTime: true}
	c.XMin, c.XMax = hourRange(p.Minutes)
	c.Series = []svgchart.Series{
		{Name: "TTFT p50", Color: colP50, Points: minutesSeries(p.Minutes, msValue(func(m MinuteStats) time.Duration { return m.TTFTP50 }))},
		{Name: "TTFT p99", Color: colP99, Points: minutesSeries(p.Minutes, msValue(func(m MinuteStats) time.Duration { return m.TTFTP99 }))},
		{Name: "ITL p99", Color: colITL, Points: minutesSeries(p.Minutes, msValue(func(m MinuteStats) time.Duration { return m.ITLP99 }))},
	}
	if d := time.Duration(p.SLO.TTFT); d > 0 {
		c.Rules = append(c.Rules, svgchart.Rule{Name: "TTFT SLO " + shortMs(d), Color: colSLO, Value: float64(d) / float64(time.Millisecond)})
	}
	if d := time.Duration(p.SLO.TPOT); d > 0 {
		c.Rules = append(c.Rules, svgchart.Rule{Name: "TPOT SLO " + shortMs(d), Color: colITL, Value: float64(d) / float64(time.Millisecond)})
	}
	return c
}

// shortMs formats a threshold for a legend: "500 ms", "2.5 ms".
func shortMs(d time.Duration) string {
	return svgchart.FormatNumber(float64(d)/float64(time.Millisecond)) + " ms"
}

// acceptanceChart draws acceptance per minute against the objective.
func acceptanceChart(p PairStats, size chartSize) svgchart.Chart {
	c := svgchart.Chart{Title: "Acceptance (%)", Width: size.w, Height: size.h, XTime: true, YMax: 100}
	c.XMin, c.XMax = hourRange(p.Minutes)
	// The objective is usually 99% or more: start the axis low enough to
	// show it apart from 100%, but no higher than the worst minute.
	c.YMin = 90
	pts := minutesSeries(p.Minutes, func(m MinuteStats) (float64, bool) { return 100 * m.Acceptance, m.Acceptance >= 0 })
	for _, pt := range pts {
		if !math.IsNaN(pt.Y) {
			c.YMin = min(c.YMin, math.Floor(pt.Y/10)*10)
		}
	}
	c.Series = []svgchart.Series{{Name: "acceptance", Color: colGoodput, Points: pts}}
	c.Rules = []svgchart.Rule{{Name: "objective " + FormatPct(p.Objective), Color: colObjective, Value: 100 * p.Objective}}
	return c
}

// goodputChart draws goodput per minute.
func goodputChart(p PairStats, size chartSize) svgchart.Chart {
	c := svgchart.Chart{Title: "Goodput (accepted req/s)", Width: size.w, Height: size.h, XTime: true}
	c.XMin, c.XMax = hourRange(p.Minutes)
	c.Series = []svgchart.Series{{Name: "goodput", Color: colGoodput,
		Points: minutesSeries(p.Minutes, func(m MinuteStats) (float64, bool) { return m.Goodput, true })}}
	return c
}

// dispositionBar draws the last hour's disposition mix.
func dispositionBar(p PairStats, width int) (template.HTML, error) {
	var segs []svgchart.Segment
	for _, d := range probe.Dispositions {
		segs = append(segs, svgchart.Segment{Name: string(d), Value: float64(p.HourDispositions[d]), Color: dispositionColors[d]})
	}
	var b strings.Builder
	err := svgchart.WriteStackedBar(&b, width, 12, segs)
	return template.HTML(b.String()), err // svgchart escapes every text
}

// pairCharts renders a pair's three charts and its disposition bar.
func pairCharts(p PairStats, size chartSize) (template.HTML, error) {
	var b strings.Builder
	for _, c := range []svgchart.Chart{latencyChart(p, size), acceptanceChart(p, size), goodputChart(p, size)} {
		if err := c.Write(&b); err != nil {
			return "", fmt.Errorf("chart %q: %w", c.Title, err)
		}
	}
	bar, err := dispositionBar(p, size.w)
	if err != nil {
		return "", fmt.Errorf("disposition bar: %w", err)
	}
	b.WriteString(`<div class="mix">` + string(bar) + `<div class="muted">last hour: `)
	var parts []string
	var total uint64
	for _, n := range p.HourDispositions {
		total += n
	}
	for _, d := range probe.Dispositions {
		if n := p.HourDispositions[d]; n > 0 {
			parts = append(parts, fmt.Sprintf(`<span style="color:%s">■</span>&nbsp;%s&nbsp;%.1f%%`, dispositionColors[d], d, 100*float64(n)/float64(total)))
		}
	}
	if len(parts) == 0 {
		parts = []string{"no requests ended"}
	}
	b.WriteString(strings.Join(parts, " ") + `</div></div>`)
	return template.HTML(b.String()), nil // svgchart escapes every text; dispositions are constants
}
