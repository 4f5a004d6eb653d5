package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vllm-prober/vllm-prober/bench/plot"
	"github.com/vllm-prober/vllm-prober/bench/stats"
	"github.com/vllm-prober/vllm-prober/internal/svgchart/svgtest"
	"github.com/vllm-prober/vllm-prober/probe"
	"github.com/vllm-prober/vllm-prober/simulator"
)

// TestBenchPlot runs bench with --plot against the simulator with some
// 500s: the plot is written, and its bins hold every request of the run.
func TestBenchPlot(t *testing.T) {
	url, _ := startSim(t, func(o *simulator.Options) { o.Faults = simulator.Faults{HTTP500: 0.2}; o.Seed = 5 })
	o := benchTestOptions(url)
	o.Plot = filepath.Join(t.TempDir(), "plots", "bench.svg")
	out, err := Bench(context.Background(), o, Env{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(o.Plot)
	if err != nil {
		t.Fatal(err)
	}
	text := svgtest.Doc(t, b)
	for _, want := range []string{"TTFT distribution", "ITL distribution", "Requests over time", "offered (planned time)"} {
		if !strings.Contains(text, want) {
			t.Errorf("plot lacks %q", want)
		}
	}
	bins := plot.BinRun(out.Run)
	sum := func(xs []int) (n int) {
		for _, x := range xs {
			n += x
		}
		return n
	}
	m := out.Metrics
	if sum(bins.Offered) != m.Offered || sum(bins.Completed) != m.Completed || sum(bins.Failed) != m.Failed ||
		sum(bins.Accepted) != m.Dispositions[probe.Accepted] {
		t.Errorf("bins: offered %d completed %d failed %d accepted %d; metrics: %d, %d, %d, %d", sum(bins.Offered), sum(bins.Completed),
			sum(bins.Failed), sum(bins.Accepted), m.Offered, m.Completed, m.Failed, m.Dispositions[probe.Accepted])
	}
	if m.Failed == 0 {
		t.Error("the run had no failures to plot")
	}
	if want := fmt.Sprintf("p50 %.1f ms", m.Dists[stats.MetricTTFT].Median); !strings.Contains(text, want) {
		t.Errorf("plot lacks the TTFT median line %q, the median bench reports", want)
	}
}
