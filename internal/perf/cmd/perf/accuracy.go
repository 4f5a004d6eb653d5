package main

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/vllm-prober/vllm-prober/internal/perf"
)

// accuracyRounds is how many times the three clients run at each rate;
// the table shows the median over the rounds of each p50 and the p99 of
// all rounds' samples together.
const accuracyRounds = 3

// runAccuracy measures the TTFT and ITL error and the send lag of the
// daemon's engine, bench's runner and a naive client against one simulator
// process at 10 to 2,000 requests/s (perf.Accuracy) and prints one table,
// with the machine's load average at the start and end of each rate.
func runAccuracy(ctx context.Context, o options) ([]row, error) {
	var rows []row
	fmt.Println("accuracy: p50 = median over rounds, p99 = of all rounds' samples (their count in brackets); " +
		"bursts = ITL gaps the server wrote back to back; trip = server arrival − client send, part of the TTFT error; errors and lag in µs")
	fmt.Println("| req/s | client | requests | TTFT err p50 / p99 (n) | trip p50 / p99 | ITL err p50 / p99 (n) | bursts | lag p50 / p99 (n) | load average start → end |")
	fmt.Println("|---|---|---|---|---|---|---|---|---|")
	// The whole part takes about 7 minutes at scale 1.
	rates, err := accuracyRates(o.accuracyRates)
	if err != nil {
		return nil, err
	}
	for _, c := range rates {
		loadStart := loadAverage()
		a, err := perf.Accuracy(ctx, perf.AccuracyOptions{Binary: o.binary, Rate: c.rate, Duration: scaled(c.d, o.scale), Rounds: accuracyRounds,
			Trace: o.trace})
		if err != nil {
			return rows, fmt.Errorf("%g/s: %w", c.rate, err)
		}
		load := loadStart + " → " + loadAverage()
		floor := a.Median(perf.ClientFloor)
		for _, client := range []string{perf.ClientDaemon, perf.ClientBench, perf.ClientFloor} {
			m := a.Median(client)
			fmt.Printf("| %g | %s | %d | %s | %s | %s | %d | %s | %s |\n", c.rate, client, m.Requests, counted(m.TTFT), pair(m.Trip), counted(m.ITL),
				m.Burst, counted(m.Lag), load)
			if client == perf.ClientFloor {
				continue
			}
			rows = append(rows, accuracyRows(c.rate, client, m, floor)...)
		}
	}
	return rows, nil
}

// accuracyRate is one rate of the accuracy part and its duration per
// client and round at scale 1.
type accuracyRate struct {
	rate float64
	d    time.Duration
}

// allAccuracyRates are the accuracy part's rates; 10 requests/s runs 30 s
// per client and round, so that its p99 is of 900 requests (the 9th
// largest), not of a handful.
var allAccuracyRates = []accuracyRate{{10, 30 * time.Second}, {300, 4 * time.Second}, {1000, 3 * time.Second}, {2000, 2 * time.Second}}

// accuracyRates returns the rates of list (-accuracy.rates), each one of
// allAccuracyRates.
func accuracyRates(list string) ([]accuracyRate, error) {
	var out []accuracyRate
	for f := range strings.SplitSeq(list, ",") {
		i := slices.IndexFunc(allAccuracyRates, func(r accuracyRate) bool { return strconv.FormatFloat(r.rate, 'g', -1, 64) == strings.TrimSpace(f) })
		if i < 0 {
			return nil, fmt.Errorf("-accuracy.rates: %q is not one of 10, 300, 1000, 2000", f)
		}
		out = append(out, allAccuracyRates[i])
	}
	return out, nil
}

// accuracyRows are the summary rows of one client at one rate: its errors
// against the naive client's and its lag against the pacing goal (≤ 0.5 ms
// up to 1,000 requests/s, ≤ the naive client's above).
func accuracyRows(rate float64, client string, m, floor perf.ClientAccuracy) []row {
	lagTarget, lagOK := "p99 ≤ 0.5 ms", m.Lag.P99 <= 500*time.Microsecond
	if rate > 1000 {
		lagTarget, lagOK = "p99 ≤ naive client's", m.Lag.P99 <= floor.Lag.P99
	}
	name := fmt.Sprintf("%g req/s, %s", rate, client)
	return []row{
		{"1 accuracy", name + ", TTFT error", fmt.Sprintf("%s (naive client %s)", counted(m.TTFT), counted(floor.TTFT)),
			"≤ naive client", meets(m.TTFT.P50 <= floor.TTFT.P50 && m.TTFT.P99 <= floor.TTFT.P99)},
		{"1 accuracy", name + ", ITL error", fmt.Sprintf("%s (naive client %s)", counted(m.ITL), counted(floor.ITL)),
			"≤ naive client", meets(m.ITL.P50 <= floor.ITL.P50 && m.ITL.P99 <= floor.ITL.P99)},
		{"2 pacing", name + ", lag", fmt.Sprintf("%s (naive client %s)", counted(m.Lag), counted(floor.Lag)), lagTarget, meets(lagOK)},
	}
}

// counted renders p50 / p99 in microseconds and the samples' count.
func counted(s perf.Stats) string {
	return fmt.Sprintf("%s (%d)", pair(s), s.N)
}

// pair renders p50 / p99 in microseconds.
func pair(s perf.Stats) string {
	return fmt.Sprintf("%s / %s", usStr(s.P50), usStr(s.P99))
}
