package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/vllm-prober/vllm-prober/internal/perf"
	"github.com/vllm-prober/vllm-prober/internal/svgchart"
)

// Flags of the scale part alone.
var (
	scaleBaseline = flag.String("scale.baseline", "", "An older vllm-prober binary to measure at 1,000 pairs too, for before/after numbers in one run.")
	scaleBeside   = flag.Bool("scale.beside", false, "With -scale.baseline: run the baseline's 1,000 pairs at the same time as this binary's, against the same servers and over the same window, instead of after it.")
	scaleChart    = flag.String("scale.chart", "", "Write the scale part's chart (share of each goal by pairs) to this SVG file.")
	scaleTargets  = flag.String("scale.targets", "3,10,30,100", "Comma-separated target counts of the scale part (10 probes each).")
	scaleServer   = flag.String("scale.server-metrics", "on,off", "Comma-separated: on (targets' /metrics re-exported), off (metrics_path \"\").")
)

// The goals of one prober with 1,000 lean pairs (docs/BENCHMARKS.md,
// "1,000 pairs").
const (
	goalCore    = 10.0 // percent of a core
	goalRSS     = 150 << 20
	goalFetch   = 50 * time.Millisecond // /metrics and the status page, p50
	goalMetrics = 5e6                   // bytes of /metrics text
)

// scaleCase is one daemon run of the scale part.
type scaleCase struct {
	targets  int
	noServer bool
	binary   string
	label    string // "" for the binary under test
	beside   string // a baseline binary run at the same time (-scale.beside)
}

// runScale measures one daemon with 3, 10, 30 and 100 targets × 10 chat
// probes (30 to 1,000 pairs) at 0.05 requests/s per pair in lean mode,
// with the targets' server metrics re-exported and without, and with
// -scale.baseline at 1,000 pairs too.
func runScale(ctx context.Context, o options) ([]row, error) {
	cases, err := scaleCases(o.binary)
	if err != nil {
		return nil, err
	}
	var rows []row
	var measured []scalePoint
	for _, c := range cases {
		so := perf.ScaleOptions{Binary: c.binary, Targets: c.targets, Probes: 10, Rate: 0.05,
			Warmup: o.fleetWarmup, Duration: scaled(o.costTime, o.scale), ScrapeEvery: 15 * time.Second, Fetches: 20,
			NoServerMetrics: c.noServer, Accept: o.accept(true)}
		var r, b perf.FleetResult
		if c.beside == "" {
			r, err = perf.Scale(ctx, so)
		} else {
			r, b, err = perf.ScaleBeside(ctx, so, c.beside)
		}
		if err != nil {
			return rows, fmt.Errorf("%s%d targets: %w", c.label, c.targets, err)
		}
		load := loadAverage()
		rows = append(rows, printScale(c, c.label, r, load))
		if c.beside != "" {
			rows = append(rows, printScale(c, c.label+"baseline "+c.beside+" ", b, load))
		}
		if (c.label == "" || c.beside != "") && !c.noServer {
			measured = append(measured, scalePoint{r.Pairs, r})
		}
	}
	if *scaleChart != "" {
		if err := writeScaleChart(*scaleChart, measured); err != nil {
			return rows, err
		}
	}
	return rows, nil
}

// scaleCases returns the runs -scale.targets and -scale.server-metrics
// ask for, the -scale.baseline binary's at 100 targets after each set
// (with -scale.beside, a run of both binaries at once, in place of the
// binary's own run at 100 targets).
func scaleCases(bin string) ([]scaleCase, error) {
	var cases []scaleCase
	for _, mode := range strings.Split(*scaleServer, ",") {
		if mode != "on" && mode != "off" {
			return nil, fmt.Errorf("-scale.server-metrics: %q is neither on nor off", mode)
		}
		for _, s := range strings.Split(*scaleTargets, ",") {
			t, err := strconv.Atoi(strings.TrimSpace(s))
			if err != nil || t < 1 {
				return nil, fmt.Errorf("-scale.targets: %q is not a positive number", s)
			}
			cases = append(cases, scaleCase{targets: t, noServer: mode == "off", binary: bin})
		}
		switch {
		case *scaleBaseline != "" && *scaleBeside:
			// The binary's 1,000 pairs are measured beside the
			// baseline's, not also alone first: a steady-state
			// comparison (a 66-minute warm-up) then takes one run.
			beside := scaleCase{targets: 100, noServer: mode == "off", binary: bin, beside: *scaleBaseline, label: "side by side: "}
			if i := slices.Index(cases, scaleCase{targets: 100, noServer: mode == "off", binary: bin}); i >= 0 {
				cases[i] = beside
			} else {
				cases = append(cases, beside)
			}
		case *scaleBaseline != "":
			cases = append(cases, scaleCase{targets: 100, noServer: mode == "off", binary: *scaleBaseline, label: "baseline "})
		case *scaleBeside:
			return nil, fmt.Errorf("-scale.beside needs -scale.baseline")
		}
	}
	return cases, nil
}

// printScale prints one daemon's numbers of case c, named with label, and
// returns its summary row.
func printScale(c scaleCase, label string, r perf.FleetResult, load string) row {
	name := fmt.Sprintf("%s%d pairs (%d targets × 10)", label, r.Pairs, c.targets)
	if c.noServer {
		name += `, metrics_path ""`
	}
	fmt.Printf("scale %s: %.0f requests in %s, CPU %s (utime+stime %s), %.2f%% of a core, RSS %.1f MiB (peak %.1f MiB)\n"+
		"  /metrics %d bytes, %d series (%.1f per pair, %d re-exported server series); timed fetches (%s, %d bytes) %v, CPU %s per fetch\n"+
		"  status page %d bytes, fetch %v, CPU %s per fetch\n  load average %s\n",
		name, r.Requests, r.Duration.Round(time.Second), r.CPU.Round(time.Millisecond), r.CPUTicks, r.CorePercent,
		mib(r.RSS), mib(r.PeakRSS), r.ScrapeBytes, r.Series, r.SeriesPerPair, r.ServerSeries, r.MetricsType, r.MetricsBytes, r.Metrics, msStr(r.MetricsCPU),
		r.StatusBytes, r.Status, msStr(r.StatusCPU), load)
	return scaleRow(name, r, load, c.targets == 100)
}

// scaleRow is the summary row of one run; at 1,000 pairs it is judged
// against the goals.
func scaleRow(name string, r perf.FleetResult, load string, judged bool) row {
	result := fmt.Sprintf("%.1f%% core, RSS %.1f MiB; /metrics p50 %s, p99 %s, CPU %s, %.2f MB, %d series (%.1f per pair, %d server); "+
		"status page p50 %s, p99 %s, CPU %s, %.0f KB; %.0f requests in %s; load %s",
		r.CorePercent, mib(r.RSS), msStr(r.Metrics.P50), msStr(r.Metrics.P99), msStr(r.MetricsCPU), float64(r.ScrapeBytes)/1e6, r.Series,
		r.SeriesPerPair, r.ServerSeries, msStr(r.Status.P50), msStr(r.Status.P99), msStr(r.StatusCPU), float64(r.StatusBytes)/1e3,
		r.Requests, r.Duration.Round(time.Second), load)
	target, verdict := "", ""
	if judged {
		// The fetches are judged by the daemon's CPU per fetch: their p50
		// on a busy machine includes waiting for a core.
		target = "≤ 10% core, ≤ 150 MiB, /metrics ≤ 50 ms and ≤ 5 MB, status page ≤ 50 ms (CPU per fetch)"
		verdict = meets(r.CorePercent <= goalCore && r.RSS <= goalRSS && r.MetricsCPU <= goalFetch &&
			r.ScrapeBytes <= goalMetrics && r.StatusCPU <= goalFetch)
	}
	return row{"3 scale", name, result, target, verdict}
}

// scalePoint is one run of the chart.
type scalePoint struct {
	pairs int
	r     perf.FleetResult
}

// writeScaleChart draws each measured quantity as a share of its goal
// against the number of pairs.
func writeScaleChart(path string, points []scalePoint) error {
	quantities := []struct {
		name, color string
		share       func(perf.FleetResult) float64
	}{
		{"CPU (goal 10% of a core)", "#1f77b4", func(r perf.FleetResult) float64 { return r.CorePercent / goalCore }},
		{"RSS (goal 150 MiB)", "#ff7f0e", func(r perf.FleetResult) float64 { return float64(r.RSS) / goalRSS }},
		{"/metrics CPU per fetch (goal 50 ms)", "#2ca02c", func(r perf.FleetResult) float64 { return float64(r.MetricsCPU) / float64(goalFetch) }},
		{"/metrics size (goal 5 MB)", "#9467bd", func(r perf.FleetResult) float64 { return float64(r.ScrapeBytes) / goalMetrics }},
		{"status page CPU per fetch (goal 50 ms)", "#8c564b", func(r perf.FleetResult) float64 { return float64(r.StatusCPU) / float64(goalFetch) }},
	}
	c := svgchart.Chart{Title: "One prober, lean pairs at 0.05 req/s each: share of each 1,000-pair goal", XLabel: "pairs",
		YLabel: "% of goal", Width: 640, Height: 300, YFormat: func(v float64) string { return svgchart.FormatNumber(v) + "%" },
		Rules: []svgchart.Rule{{Name: "goal", Color: "#d62728", Value: 100}}}
	for _, q := range quantities {
		s := svgchart.Series{Name: q.name, Color: q.color, Markers: true}
		for _, p := range points {
			s.Points = append(s.Points, svgchart.Point{X: float64(p.pairs), Y: 100 * q.share(p.r)})
		}
		c.Series = append(c.Series, s)
	}
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("scale chart: %w", err)
	}
	if err := svgchart.WriteDocument(f, c); err != nil {
		f.Close()
		return fmt.Errorf("scale chart: %w", err)
	}
	return f.Close()
}
