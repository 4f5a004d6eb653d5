package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/vllm-prober/vllm-prober/internal/perf"
)

// Soak shape: 100 targets × 10 probes at 0.05 requests/s per pair, 30
// reloads each renaming 10 targets and 1 probe (190 of the 1,000 pairs go
// and as many come), judged in 5 windows of 12 samples each.
const (
	soakTargets, soakProbes = 100, 10
	soakRate                = 0.05
	soakWindows             = 5
	soakReloads             = 30
	soakSamplesPerWindow    = 12
)

// runSoak runs the daemon with 1,000 pairs and churning reloads for
// -soak.duration (scaled) and judges whether its RSS stays flat after the
// first window.
func runSoak(ctx context.Context, o options) ([]row, error) {
	d := scaled(o.soakTime, o.scale)
	r, err := perf.Soak(ctx, perf.SoakOptions{Binary: o.binary, Targets: soakTargets, Probes: soakProbes, Rate: soakRate,
		Duration: d, Windows: soakWindows, ReloadEvery: d / soakReloads, ChurnTargets: 10, ChurnProbes: 1,
		SampleEvery: d / (soakWindows * soakSamplesPerWindow), Log: os.Stdout})
	if err != nil {
		return nil, err
	}
	fmt.Printf("soak: %d pairs, %d reloads in %s\n", r.Pairs, r.Reloads, d)
	fmt.Println("| window | RSS min / max | goroutines max | series min / max | daemon CPU | reloads |")
	fmt.Println("|---|---|---|---|---|---|")
	for _, w := range r.Windows {
		fmt.Printf("| %s–%s | %.1f / %.1f MiB | %d | %d / %d | %.1f%% core | %d |\n", w.Start.Round(time.Second), w.End.Round(time.Second),
			mib(w.MinRSS), mib(w.MaxRSS), w.MaxGoroutines, w.MinSeries, w.MaxSeries, w.CorePercent, w.ReloadsInWindow)
	}
	first, second, last := r.Windows[0], r.Windows[1], r.Windows[len(r.Windows)-1]
	return []row{{"6 soak", fmt.Sprintf("%d pairs, %d reloads (190 pairs renamed each) in %s", r.Pairs, r.Reloads, d),
		fmt.Sprintf("max RSS per window %.0f → %.0f → … → %.0f MiB (%+.1f%% last vs second)", mib(first.MaxRSS), mib(second.MaxRSS), mib(last.MaxRSS), 100*r.Growth),
		fmt.Sprintf("last window's max ≤ second's + %.0f%%", 100*perf.FlatTolerance), meets(r.Flat)}}, nil
}
