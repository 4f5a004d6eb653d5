package perf

import (
	"fmt"
	"slices"
	"testing"

	"github.com/vllm-prober/vllm-prober/config"
)

// TestScaleConfig checks that the scale run's configuration loads into
// targets × probes static pairs, each on its own address, in lean mode
// (ttft and e2el, native only), with or without server metrics.
func TestScaleConfig(t *testing.T) {
	for _, noServer := range []bool{false, true} {
		t.Run(fmt.Sprintf("no server metrics %v", noServer), func(t *testing.T) {
			dir := t.TempDir()
			addrs := []string{"127.0.0.1:1001", "127.0.0.1:1002", "127.0.0.1:1003"}
			cfg := loadConfigText(t, scaleConfig(dir, addrs, ScaleOptions{Targets: 3, Probes: 4, Rate: 0.05, NoServerMetrics: noServer}))
			pairs := cfg.Pairs()
			var urls []string
			for _, p := range pairs {
				sel := p.Probe.HistogramSelection()
				if p.Probe.Rate != 0.05 || sel.Classic || !slices.Equal(sel.Names, config.LeanHistograms) {
					t.Errorf("pair %s: rate %g, histograms %v", p.Key, p.Probe.Rate, sel)
				}
				if (p.Target.MetricsPath == "") != noServer {
					t.Errorf("pair %s: metrics_path %q", p.Key, p.Target.MetricsPath)
				}
				urls = append(urls, p.Target.URL)
			}
			slices.Sort(urls)
			if urls = slices.Compact(urls); len(pairs) != 12 || len(urls) != 3 {
				t.Errorf("%d pairs over %d URLs %q, want 12 over 3", len(pairs), len(urls), urls)
			}
		})
	}
}
