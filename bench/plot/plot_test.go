package plot

import (
	"bytes"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vllm-prober/vllm-prober/bench/capacity"
	"github.com/vllm-prober/vllm-prober/bench/openloop"
	"github.com/vllm-prober/vllm-prober/bench/stats"
	"github.com/vllm-prober/vllm-prober/internal/svgchart"
	"github.com/vllm-prober/vllm-prober/internal/svgchart/svgtest"
	"github.com/vllm-prober/vllm-prober/probe"
)

// TestWriteChartLatencyAndReasons: the capacity chart draws the rule's
// percentile of each latency metric against offered load with its SLO,
// and labels each failing level with its reasons, once per level.
func TestWriteChartLatencyAndReasons(t *testing.T) {
	s := &capacity.Search{Rated: 2}
	for _, rate := range []float64{1, 2, 4} {
		for i := range 2 {
			r := capacity.Repeat{Rate: rate, Index: i, Pass: rate <= 2, Metrics: stats.Metrics{Goodput: rate * 0.9, Latency: map[string]stats.Dist{
				stats.MetricTTFT: {Percentiles: []stats.Percentile{{P: 99, MS: 100 * rate}}},
				stats.MetricE2EL: {Percentiles: []stats.Percentile{{P: 99, MS: 1000 * rate}}},
			}}}
			if !r.Pass {
				r.Why = []string{"p99 ttft 400.00ms > 300ms"}
			}
			s.Repeats = append(s.Repeats, r)
		}
	}
	rule := capacity.PassRule{MinAcceptance: 0.99, Percentile: 99, TTFT: 300 * time.Millisecond}
	var buf bytes.Buffer
	if err := Capacity(&buf, s, rule, "Capacity of test"); err != nil {
		t.Fatal(err)
	}
	text := svgtest.Doc(t, buf.Bytes())
	for _, want := range []string{"p99 ttft (ms) against offered load", "SLO 300ms", "p99 e2el (ms) against offered load"} {
		if !strings.Contains(text, want) {
			t.Errorf("chart lacks %q", want)
		}
	}
	if strings.Contains(text, "p99 tpot") {
		t.Error("chart draws TPOT, which no level measured")
	}
	// One label per failing level and chart (throughput, TTFT, E2EL),
	// each failing repeat marked.
	if n := strings.Count(buf.String(), ">p99 ttft 400.00ms &gt; 300ms</text>"); n != 3 {
		t.Errorf("reason labelled %d times, want once per chart", n)
	}
	if n := strings.Count(buf.String(), `class="mark"`); n != 6 {
		t.Errorf("%d failure marks, want 2 repeats on 3 charts", n)
	}
	pts := levelMeans(s, func(r capacity.Repeat) float64 { return r.Metrics.LatencyPercentile(stats.MetricTTFT, 99) })
	if len(pts) != 3 || pts[2] != (svgchart.Point{X: 4, Y: 400}) {
		t.Errorf("TTFT p99 by level %v, want 100, 200, 400 ms", pts)
	}
}

func TestCDF(t *testing.T) {
	sorted := []float64{1, 2, 2, 2, 5}
	got := cdf(sorted, 4)
	want := []svgchart.Point{{X: 1, Y: 20}, {X: 2, Y: 80}, {X: 5, Y: 100}}
	if len(got) != len(want) {
		t.Fatalf("cdf %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("point %d: %v, want %v", i, got[i], want[i])
		}
	}
	many := make([]float64, 10000)
	for i := range many {
		many[i] = float64(i)
	}
	if pts := cdf(many, cdfPoints); len(pts) != cdfPoints+1 || pts[len(pts)-1] != (svgchart.Point{X: 9999, Y: 100}) {
		t.Errorf("%d points ending at %v, want %d ending at (9999, 100)", len(pts), pts[len(pts)-1], cdfPoints+1)
	}
}

// TestBinRun counts a hand-made run into bins.
func TestBinRun(t *testing.T) {
	start := time.Unix(1000, 0)
	at := func(s float64) time.Time { return start.Add(time.Duration(s * float64(time.Second))) }
	run := &openloop.Run{Start: start, End: at(2.5)}
	for _, r := range []struct {
		sched, end float64
		d          probe.Disposition
	}{{0.1, 0.5, probe.Accepted}, {0.2, 1.2, probe.LatencyFailure}, {0.9, 2.4, probe.ClientTimeout}, {1.5, 1.6, probe.Accepted}} {
		run.Results = append(run.Results, &probe.Result{Scheduled: at(r.sched), Disposition: r.d})
		run.Ended = append(run.Ended, at(r.end))
	}
	b := BinRun(run)
	for name, c := range map[string]struct{ got, want []int }{
		"offered":   {b.Offered, []int{3, 1, 0}},
		"completed": {b.Completed, []int{1, 2, 0}},
		"accepted":  {b.Accepted, []int{1, 1, 0}},
		"failed":    {b.Failed, []int{0, 0, 1}},
	} {
		if !slices.Equal(c.got, c.want) {
			t.Errorf("%s per second %v, want %v", name, c.got, c.want)
		}
	}
	// The last bin, [2s, 2.5s], is half a bin wide: its one failure is
	// 2 req/s, not 1.
	for _, series := range overTimeChart(run).Series {
		if !strings.HasPrefix(series.Name, "failed") {
			continue
		}
		if got := series.Points[len(series.Points)-1]; got != (svgchart.Point{X: 2, Y: 2}) {
			t.Errorf("last failed point %v, want (2, 2)", got)
		}
	}
	exact := &openloop.Run{Start: start, End: at(3), Results: run.Results, Ended: run.Ended}
	if b := BinRun(exact); len(b.Offered) != 3 || b.binWidth(2) != time.Second {
		t.Errorf("a 3s run in %d bins, the last %v wide; want 3 bins of 1s", len(b.Offered), b.binWidth(2))
	}
	long := &openloop.Run{Start: start, End: start.Add(time.Hour)}
	if b := BinRun(long); b.width != 32*time.Second || len(b.Offered) > timeBinsAt+1 {
		t.Errorf("an hour in %v bins (%d), want 32s bins, at most %d", b.width, len(b.Offered), timeBinsAt+1)
	}
}

func TestWriteChart(t *testing.T) {
	s := &capacity.Search{Rated: 5, Saturated: true, LowestFail: 6}
	for _, r := range []float64{1, 2, 4, 5, 6, 8} {
		for i := range 2 {
			g := math.Min(r, 5.5) * 0.995
			s.Repeats = append(s.Repeats, capacity.Repeat{Rate: r, Index: i, Pass: r <= 5, Metrics: stats.Metrics{CompletedThroughput: math.Min(r, 6), Goodput: g}})
		}
	}
	var buf bytes.Buffer
	if err := Capacity(&buf, s, capacity.PassRule{MinAcceptance: 0.99, Percentile: 99}, "Capacity of test"); err != nil {
		t.Fatal(err)
	}
	text := svgtest.Doc(t, buf.Bytes())
	for _, want := range []string{"Capacity of test", "completed/s (wall clock)", "goodput/s (accepted)", "pass line", "rated capacity 5.00 req/s", "failing repeat", "offered load (req/s)"} {
		t.Run(want, func(t *testing.T) {
			if !strings.Contains(text, want) {
				t.Errorf("chart lacks %q", want)
			}
		})
	}
}

// TestChartLeavesOutUnmeasured: a level whose answers were one token
// each measured no TPOT (stats.Compute marks it Empty), so the chart has
// no TPOT chart and no point at 0 ms; TTFT and E2EL are drawn.
func TestChartLeavesOutUnmeasured(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	run := &openloop.Run{Start: t0, Timeout: time.Second, Span: 300 * time.Millisecond}
	for i := range 4 {
		at := t0.Add(time.Duration(i) * 100 * time.Millisecond)
		run.Results = append(run.Results, &probe.Result{Seq: uint64(i + 1), Scheduled: at, Sent: at, Disposition: probe.Accepted,
			TTFT: 10 * time.Millisecond, E2EL: 10 * time.Millisecond, OutputTokens: 1})
		run.Ended = append(run.Ended, at.Add(10*time.Millisecond))
	}
	run.End = run.Ended[3]
	m := stats.Compute(run, stats.Options{Percentiles: []float64{50, 99}})
	s := &capacity.Search{Rated: 1, Repeats: []capacity.Repeat{{Rate: 1, Pass: true, Metrics: m}}}
	var buf bytes.Buffer
	if err := Capacity(&buf, s, capacity.PassRule{MinAcceptance: 0.99, Percentile: 99}, "Capacity of test"); err != nil {
		t.Fatal(err)
	}
	text := svgtest.Doc(t, buf.Bytes())
	if strings.Contains(text, "p99 tpot") || !strings.Contains(text, "p99 ttft") || !strings.Contains(text, "p99 e2el") {
		t.Errorf("chart titles: want TTFT and E2EL charts and none for TPOT, which no request measured")
	}
}
