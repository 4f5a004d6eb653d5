package main

import (
	"context"
	"fmt"
	"time"

	"github.com/vllm-prober/vllm-prober/internal/perf"
)

// runFleet measures the daemon probing 5 fleet targets × 40 replicas × 2
// probes (400 replica pairs) at 0.1 requests/s per pair, then times its
// /metrics and status page; once scraping every replica's /metrics (the
// default) and once with metrics_path "".
func runFleet(ctx context.Context, o options) ([]row, error) {
	var rows []row
	for _, noServer := range []bool{false, true} {
		r, err := perf.Fleet(ctx, perf.FleetOptions{Binary: o.binary, Targets: 5, Replicas: 40, Probes: 2, Rate: 0.1,
			Warmup: o.fleetWarmup, Duration: scaled(o.costTime, o.scale), ScrapeEvery: 15 * time.Second, Fetches: 20,
			NoServerMetrics: noServer, Accept: o.accept(false)})
		if err != nil {
			return rows, err
		}
		name := "5 targets × 40 replicas × 2 probes @ 0.1/s"
		if noServer {
			name += `, metrics_path ""`
		}
		fmt.Printf("fleet %s: %d replicas, %d replica pairs, %.0f requests in %s, CPU %s (utime+stime %s), %.2f%% of a core, RSS %.1f MiB (peak %.1f MiB)\n"+
			"  /metrics %d bytes, %d series (%.1f per replica pair, %d re-exported server series), fetch %v\n  status page %d bytes, fetch %v\n",
			name, r.Replicas, r.Pairs, r.Requests, r.Duration.Round(time.Second), r.CPU.Round(time.Millisecond), r.CPUTicks,
			r.CorePercent, mib(r.RSS), mib(r.PeakRSS), r.ScrapeBytes, r.Series, r.SeriesPerPair, r.ServerSeries, r.Metrics, r.StatusBytes, r.Status)
		rows = append(rows,
			row{"3 fleet", name + " (daemon process)", fmt.Sprintf("%.1f%% core, RSS %.1f MiB (%d pairs, %.0f requests in %s)",
				r.CorePercent, mib(r.RSS), r.Pairs, r.Requests, r.Duration.Round(time.Second)), "≤ 1 core", meets(r.CorePercent <= 100)},
			row{"3 fleet", name + ", /metrics", fmt.Sprintf("p50 %s, p99 %s; %.0f KB, %d series (%.1f per replica pair, %d of server metrics)",
				msStr(r.Metrics.P50), msStr(r.Metrics.P99), float64(r.ScrapeBytes)/1e3, r.Series, r.SeriesPerPair, r.ServerSeries), "", ""},
			row{"3 fleet", name + ", status page", fmt.Sprintf("p50 %s, p99 %s; %.0f KB",
				msStr(r.Status.P50), msStr(r.Status.P99), float64(r.StatusBytes)/1e3), "", ""})
	}
	return rows, nil
}

// msStr formats d in milliseconds with one decimal.
func msStr(d time.Duration) string {
	return fmt.Sprintf("%.1fms", float64(d)/float64(time.Millisecond))
}
