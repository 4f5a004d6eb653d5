package collector

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/vllm-prober/vllm-prober/collector/metricname"
	"github.com/vllm-prober/vllm-prober/config"
	"github.com/vllm-prober/vllm-prober/internal/promtext"
	"github.com/vllm-prober/vllm-prober/probe"
)

// distinctSLOConfig has one target and n probes whose SLO thresholds all
// differ, each pair with one finished result.
func distinctSLOConfig(n int) (*Collector, *config.Config) {
	cfg := &config.Config{Targets: []config.Target{{Name: "llama", URL: "http://127.0.0.1:1"}}}
	for i := range n {
		cfg.Probes = append(cfg.Probes, config.Probe{Name: fmt.Sprintf("p%04d", i), API: config.APIChat, Rate: 1, SLO: config.SLO{
			TTFT: dur(strconv.Itoa(101+i) + "ms"), TPOT: dur(strconv.Itoa(21+i) + "ms"), E2EL: dur(strconv.Itoa(5001+i) + "ms"),
		}})
	}
	c := New(Options{Now: clock})
	syncPairs(c, cfg)
	for _, p := range cfg.Probes {
		c.Offered(config.PairKey{Target: "llama", Probe: p.Name})
		c.Finished(&probe.Result{
			Target: "llama", Probe: p.Name, Disposition: probe.Accepted, Sent: fixedNow,
			TTFT: 150 * time.Millisecond, TPOT: 25 * time.Millisecond, E2EL: 2 * time.Second,
			ITLs:   []time.Duration{25 * time.Millisecond},
			Server: &probe.ServerTiming{QueueTime: 10 * time.Millisecond, TTFT: 120 * time.Millisecond},
		})
	}
	return c, cfg
}

// TestHistogramBucketsBounded checks that with many probes of distinct
// SLOs every histogram has at most MaxClassicBuckets boundaries and each
// pair's series still has its own probe's thresholds as exact boundaries.
func TestHistogramBucketsBounded(t *testing.T) {
	const n = 200
	c, cfg := distinctSLOConfig(n)
	mfs := promtext.Gather(t, c)
	ttft := func(s config.SLO) time.Duration { return time.Duration(s.TTFT) }
	tpot := func(s config.SLO) time.Duration { return time.Duration(s.TPOT) }
	own := map[string]func(config.SLO) time.Duration{
		metricname.TTFT: ttft, metricname.ServerTTFT: ttft, metricname.ITL: tpot, metricname.TPOT: tpot,
		metricname.E2EL: func(s config.SLO) time.Duration { return time.Duration(s.E2EL) },
	}
	histograms := 0
	for _, mf := range mfs {
		if mf.GetType() != dto.MetricType_HISTOGRAM {
			continue
		}
		for _, m := range mf.GetMetric() {
			histograms++
			var les []float64
			for _, b := range m.GetHistogram().GetBucket() {
				if !math.IsInf(b.GetUpperBound(), 1) {
					les = append(les, b.GetUpperBound())
				}
			}
			if len(les) > MaxClassicBuckets {
				t.Fatalf("%s%v has %d buckets, over %d", mf.GetName(), m.GetLabel(), len(les), MaxClassicBuckets)
			}
			f, ok := own[mf.GetName()]
			if !ok {
				continue
			}
			p, _ := cfg.Probe(promtext.Labels(m)[labelProbe])
			want := f(p.SLO).Seconds()
			if !slices.Contains(les, want) {
				t.Errorf("%s of probe %s lacks its threshold %g: %v", mf.GetName(), p.Name, want, les)
			}
		}
	}
	if histograms < n*8 {
		t.Errorf("%d histogram series, want at least %d", histograms, n*8)
	}
}

// BenchmarkScrapeDistinctSLOs measures /metrics for one target and 200 or
// 1,000 probes whose SLO thresholds all differ (docs/BENCHMARKS.md).
func BenchmarkScrapeDistinctSLOs(b *testing.B) {
	for _, n := range []int{200, 1000} {
		b.Run(fmt.Sprintf("probes=%d", n), func(b *testing.B) {
			c, _ := distinctSLOConfig(n)
			reg := prometheus.NewRegistry()
			reg.MustRegister(c)
			promtext.BenchmarkGather(b, reg)
		})
	}
}
