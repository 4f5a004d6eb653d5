package main

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/vllm-prober/vllm-prober/internal/perf"
)

// part is one benchmark of the harness, selected by its name with -only.
type part struct {
	name string
	run  func(context.Context, options) ([]row, error)
	// daemon parts run the vllm-prober binary (options.binary).
	daemon bool
	// within names the part that already runs this one; such a part runs
	// only when named, and not when its container is named too.
	within string
}

// parts are every part in the order they run. A new part is one line
// here and a function returning its summary rows.
var parts = []part{
	{name: "fidelity", run: runFidelity},
	{name: "schedule", run: runSchedule, daemon: true},
	{name: "cost", run: runCost, daemon: true},
	{name: "fleet", run: runFleet, daemon: true},
	{name: "scale", run: runScale, daemon: true},
	{name: "scrape", run: runScrape},
	{name: "hotpaths", run: runHotPaths},
	{name: "accuracy", run: runAccuracy, daemon: true},
	{name: "soak", run: runSoak, daemon: true},
	{name: "schedule.workers", run: runScheduleWorkers, daemon: true, within: "schedule"},
}

// defaultParts are the parts -only selects by default: all but those
// within another.
func defaultParts() []string {
	var names []string
	for _, p := range parts {
		if p.within == "" {
			names = append(names, p.name)
		}
	}
	return names
}

// partNames are every part's name.
func partNames() []string {
	names := make([]string, len(parts))
	for i, p := range parts {
		names[i] = p.name
	}
	return names
}

// selectParts returns the parts of a comma-separated -only list in run
// order, or an error naming an unknown part.
func selectParts(only string) ([]part, error) {
	want := map[string]bool{}
	for name := range strings.SplitSeq(only, ",") {
		name = strings.TrimSpace(name)
		if !slices.Contains(partNames(), name) {
			return nil, fmt.Errorf("-only: unknown part %q (parts: %s)", name, strings.Join(partNames(), ", "))
		}
		want[name] = true
	}
	var selected []part
	for _, p := range parts {
		if want[p.name] && !want[p.within] {
			selected = append(selected, p)
		}
	}
	return selected, nil
}

// runFidelity measures TTFT and ITL error at 1, 50 and 500 requests/s.
func runFidelity(ctx context.Context, o options) ([]row, error) {
	var rows []row
	for _, c := range []struct {
		rate float64
		d    time.Duration
	}{{1, 30 * time.Second}, {50, 10 * time.Second}, {500, 4 * time.Second}} {
		f, err := perf.Fidelity(ctx, c.rate, scaled(c.d, o.scale), 16)
		if err != nil {
			return rows, fmt.Errorf("%g/s: %w", c.rate, err)
		}
		fmt.Printf("fidelity %g/s: %d requests compared (%d not accepted)\n  ttft error %v\n  itl error  %v\n  request trip (sent->handler) %v\n  delivery (write->read) %v\n",
			c.rate, f.Requests, f.Skipped, f.TTFT, f.ITL, f.Trip, f.Delivery)
		target, verdict := "", ""
		if c.rate == 50 {
			target = "p50 < 100µs, p99 < 1ms"
			verdict = meets(f.TTFT.P50 < 100*time.Microsecond && f.TTFT.P99 < time.Millisecond) + " TTFT, " +
				meets(f.ITL.P50 < 100*time.Microsecond && f.ITL.P99 < time.Millisecond) + " ITL"
		}
		rows = append(rows,
			row{"1 fidelity", fmt.Sprintf("%g req/s, TTFT error", c.rate), quant(f.TTFT), target, verdict},
			row{"1 fidelity", fmt.Sprintf("%g req/s, ITL error", c.rate), quant(f.ITL), "", ""})
	}
	return rows, nil
}

// runSchedule measures the schedule lag at 10 to 5000 requests/s.
func runSchedule(ctx context.Context, o options) ([]row, error) {
	var rows []row
	highest := 0.0
	for _, c := range []struct {
		rate float64
		d    time.Duration
	}{{10, 20 * time.Second}, {100, 5 * time.Second}, {1000, 3 * time.Second}, {2000, 2 * time.Second}, {3000, 2 * time.Second}, {5000, 2 * time.Second}, {10000, time.Second}} {
		s, err := perf.Schedule(ctx, c.rate, scaled(c.d, o.scale))
		if err != nil {
			return rows, fmt.Errorf("%g/s: %w", c.rate, err)
		}
		fmt.Printf("schedule %g/s: offered %d, sent %.0f/s, %d failed\n  lag (real requests) %v\n  lag (scheduler only) %v\n"+
			"  lag (scheduler only, timerfd per wait) %v\n  lag (scheduler only, runtime timer) %v\n",
			c.rate, s.Offered, s.Achieved, s.Failed, s.Lag, s.SchedulerLag, s.PerWaitLag, s.TimerLag)
		target, verdict := "", ""
		if c.rate <= 1000 {
			target, verdict = "p99 < 1ms", meets(s.Lag.P99 < time.Millisecond)
		}
		if s.Lag.P99 < 5*time.Millisecond {
			highest = math.Max(highest, c.rate)
		}
		rows = append(rows,
			row{"2 schedule", fmt.Sprintf("%g req/s, lag", c.rate), fmt.Sprintf("p50 %s, p99 %s (sent %.0f/s)", usStr(s.Lag.P50), usStr(s.Lag.P99), s.Achieved), target, verdict},
			row{"2 schedule", fmt.Sprintf("%g req/s, scheduler only", c.rate), fmt.Sprintf("p50 %s, p99 %s (timerfd per wait: p50 %s, p99 %s; runtime timer: p50 %s, p99 %s)",
				usStr(s.SchedulerLag.P50), usStr(s.SchedulerLag.P99), usStr(s.PerWaitLag.P50), usStr(s.PerWaitLag.P99), usStr(s.TimerLag.P50), usStr(s.TimerLag.P99)), "", ""})
	}
	rows = append(rows, row{"2 schedule", "highest rate tried with p99 lag < 5ms", fmt.Sprintf("%g req/s", highest), "", ""})
	rows = append(rows, benchScheduleRows(ctx, o)...)
	workers, err := runScheduleWorkers(ctx, o)
	return append(rows, workers...), err
}

// runScheduleWorkers measures the send lag of bench as processes: one
// process against two --shard worker processes at the same total rate
// (perf.BenchProcesses). It is part of the schedule part, and a part of
// its own (schedule.workers) to run it alone.
func runScheduleWorkers(ctx context.Context, o options) ([]row, error) {
	runs := []struct {
		rate float64
		d    time.Duration
	}{{10, 20 * time.Second}, {100, 5 * time.Second}}
	rows := make([]row, 0, len(runs))
	for _, c := range runs {
		s, err := perf.BenchProcesses(ctx, o.binary, c.rate, scaled(c.d, o.scale))
		if err != nil {
			return rows, fmt.Errorf("bench processes %g/s: %w", c.rate, err)
		}
		fmt.Printf("bench processes %g/s: offered %d\n  lag (one process) %v\n  lag (2 worker processes) %v\n  lag (worker 0) %v\n  lag (worker 1) %v\n",
			c.rate, s.Offered, s.One, s.Workers, s.Worker[0], s.Worker[1])
		rows = append(rows, row{"2 schedule", fmt.Sprintf("bench %g req/s, processes", c.rate),
			fmt.Sprintf("one process: p50 %s, p99 %s; 2 worker processes: p50 %s, p99 %s", usStr(s.One.P50), usStr(s.One.P99),
				usStr(s.Workers.P50), usStr(s.Workers.P99)), "", ""})
	}
	return rows, nil
}

// benchScheduleRows measures bench's open-loop runner (bench/openloop),
// scheduler only: its precise wait (one timerfd per run) against a timerfd
// per wait and a runtime timer, and two shards of one schedule run at once
// against the whole.
func benchScheduleRows(ctx context.Context, o options) []row {
	var rows []row
	for _, c := range []struct {
		rate float64
		d    time.Duration
	}{{10, 20 * time.Second}, {100, 5 * time.Second}, {1000, 3 * time.Second}} {
		s := perf.BenchSchedule(ctx, c.rate, scaled(c.d, o.scale))
		fmt.Printf("bench schedule %g/s: offered %d\n  lag (precise wait) %v\n  lag (timerfd per wait) %v\n  lag (runtime timer) %v\n  lag (2 shards) %v\n",
			c.rate, s.Offered, s.Precise, s.PerWait, s.Timer, s.Sharded2)
		rows = append(rows, row{"2 schedule", fmt.Sprintf("bench %g req/s, scheduler only", c.rate),
			fmt.Sprintf("p50 %s, p99 %s (timerfd per wait: p50 %s, p99 %s; runtime timer: p50 %s, p99 %s; 2 shards: p50 %s, p99 %s)",
				usStr(s.Precise.P50), usStr(s.Precise.P99), usStr(s.PerWait.P50), usStr(s.PerWait.P99), usStr(s.Timer.P50), usStr(s.Timer.P99),
				usStr(s.Sharded2.P50), usStr(s.Sharded2.P99)),
			"p99 ≤ 0.5ms", meets(s.Precise.P99 <= 500*time.Microsecond)})
	}
	return rows
}

// runCost measures the daemon idle, as a sidecar (1 req/s, 64- and
// 16-token answers) and with 10×3 pairs; with -cost.baseline it measures
// the 16-token sidecar again with that binary, right after.
func runCost(ctx context.Context, o options) ([]row, error) {
	type costCase struct {
		targets, probes, tokens int
		rate                    float64
		target                  string
		ok                      func(perf.CostResult) bool
		binary, label           string
		env                     []string
		floor                   bool // the naive client (perf.FloorCost), not the daemon
	}
	// The idle case (one request per ~3 hours) is the fixed cost: the
	// runtime, server-metrics scrapes and /metrics scrapes.
	cases := []costCase{
		{targets: 1, probes: 1, tokens: 64, rate: 0.0001},
		{targets: 1, probes: 1, tokens: 64, rate: 1, target: "< 0.5% core, < 40 MiB",
			ok: func(r perf.CostResult) bool { return r.CorePercent < 0.5 && r.RSS < 40<<20 }},
		// The sidecar as deployed: deploy/kubernetes/sidecar's limits.cpu
		// of 100m gives Go's cgroup-aware default of 2 Ps (it never goes
		// below 2), the same as this 2-CPU machine's default.
		{targets: 1, probes: 1, tokens: 16, rate: 1, target: "≤ 0.25% core, ≤ 30 MiB", ok: sidecarMet},
		// The same on one P, which only the GOMAXPROCS variable gives: no
		// second thread woken per event.
		{targets: 1, probes: 1, tokens: 16, rate: 1, env: []string{"GOMAXPROCS=1"}},
		{targets: 10, probes: 3, tokens: 64, rate: 1},
	}
	if o.costBaseline != "" {
		cases = append(cases, costCase{targets: 1, probes: 1, tokens: 16, rate: 1, target: "≤ 0.25% core, ≤ 30 MiB", ok: sidecarMet,
			binary: o.costBaseline, label: " (baseline " + o.costBaseline + ")"})
	}
	// The naive client alone sending the sidecar's requests (no ledger,
	// metrics or judging): what the requests cost any Go client here.
	cases = append(cases, costCase{targets: 1, probes: 1, tokens: 16, rate: 1, floor: true, label: " (floor: the naive client's process)"})
	var rows []row
	for _, c := range cases {
		b := o.binary
		if c.binary != "" {
			b = c.binary
		}
		co := perf.CostOptions{Binary: b, Targets: c.targets, Probes: c.probes, Rate: c.rate, OutputTokens: c.tokens, Env: c.env,
			Warmup: o.costWarmup, Duration: scaled(o.costTime, o.scale), ScrapeEvery: 15 * time.Second, Accept: o.accept(false)}
		var r perf.CostResult
		var err error
		if c.floor {
			r, err = perf.FloorCost(ctx, co, o.self)
		} else {
			r, err = perf.Cost(ctx, co)
		}
		if err != nil {
			return rows, fmt.Errorf("%d×%d%s: %w", c.targets, c.probes, c.label, err)
		}
		fmt.Printf("cost %s%s: %.0f requests in %s, CPU %s (utime+stime %s), %.3f%% of a core, %s/request, RSS %.1f MiB (peak %.1f MiB), /metrics %d bytes, context switches %d voluntary (%s) + %d involuntary\n",
			r.Name, c.label, r.Requests, r.Duration.Round(time.Second), r.CPU.Round(time.Millisecond), r.CPUTicks, r.CorePercent,
			r.CPUPerRequest.Round(time.Microsecond), mib(r.RSS), mib(r.PeakRSS), r.ScrapeBytes, r.Voluntary, switchRate(r), r.Involuntary)
		verdict := ""
		if c.ok != nil {
			verdict = meets(c.ok(r))
		}
		perRequest := "no requests"
		if r.Requests > 0 {
			perRequest = r.CPUPerRequest.Round(10*time.Microsecond).String() + " CPU/request"
		}
		process := " (daemon process)"
		if c.floor {
			process = ""
		}
		rows = append(rows, row{bench: "3 cost", name: r.Name + c.label + process,
			result: fmt.Sprintf("%.3f%% core, %s, RSS %.1f MiB, %s", r.CorePercent, perRequest, mib(r.RSS), switchRate(r)), target: c.target, verdict: verdict})
	}
	return rows, nil
}

// switchRate is the daemon's voluntary context switches (its sleeps, each one a wake-up)
// per request, or per second when it sent none.
func switchRate(r perf.CostResult) string {
	if r.Requests > 0 {
		return fmt.Sprintf("%.1f voluntary switches/request", float64(r.Voluntary)/r.Requests)
	}
	return fmt.Sprintf("%.2f voluntary switches/s", float64(r.Voluntary)/r.Duration.Seconds())
}

// sidecarMet is the sidecar goal: ≤ 0.25% of a core and ≤ 30 MiB RSS.
func sidecarMet(r perf.CostResult) bool { return r.CorePercent <= 0.25 && r.RSS <= 30<<20 }

// runScrape runs the collector's scrape benchmark.
func runScrape(ctx context.Context, o options) ([]row, error) {
	res, _, err := perf.RunGoBench(ctx, o.moduleDir, "^BenchmarkScrape$", []string{"-benchtime", "100x"}, "./collector/server/")
	if err != nil {
		return nil, err
	}
	var rows []row
	for _, b := range res {
		m := b.Metrics
		fmt.Printf("%s: %.2f ms/scrape, %.0f bytes (%.0f gzip), %.0f series, %.0f allocs\n", b.Name,
			m["ns/op"]/1e6, m["bytes/scrape"], m["gzip-bytes/scrape"], m["series"], m["allocs/op"])
		if b.Name == "BenchmarkScrape/all" {
			rows = append(rows, row{"4 scrape", "10 targets × 3 probes + server metrics",
				fmt.Sprintf("%.1f ms, %.0f KB text, %.0f KB gzip", m["ns/op"]/1e6, m["bytes/scrape"]/1e3, m["gzip-bytes/scrape"]/1e3), "", ""})
		}
	}
	return rows, nil
}

// runHotPaths runs the per-event and per-request micro-benchmarks.
func runHotPaths(ctx context.Context, o options) ([]row, error) {
	var rows []row
	for _, pkg := range []struct{ pattern, dir string }{
		{"^Benchmark(SSE|SSEAndDecode|StreamEvent|Judge|LedgerWrite|RequestBody|SleepPrecise)$", "./probe/..."},
		{"^BenchmarkFinished$", "./collector/"},
	} {
		res, _, err := perf.RunGoBench(ctx, o.moduleDir, pkg.pattern, nil, pkg.dir)
		if err != nil {
			return rows, err
		}
		for _, b := range res {
			m := b.Metrics
			fmt.Printf("%s: %.0f ns/op, %.0f B/op, %.0f allocs/op\n", b.Name, m["ns/op"], m["B/op"], m["allocs/op"])
			result := fmt.Sprintf("%.0f ns, %.0f allocs", m["ns/op"], m["allocs/op"])
			if v, ok := m["ns/observation"]; ok {
				result += fmt.Sprintf(" (%.0f ns/observation)", v)
			}
			target, verdict := "", ""
			if b.Name == "BenchmarkSSE" {
				target, verdict = "0 allocs/event", meets(m["allocs/op"] == 0)
			}
			rows = append(rows, row{"5 hot path", b.Name, result, target, verdict})
		}
	}
	return rows, nil
}

func scaled(d time.Duration, s float64) time.Duration { return time.Duration(float64(d) * s) }

func mib(b int64) float64 { return float64(b) / (1 << 20) }

func meets(ok bool) string {
	if ok {
		return "met"
	}
	return "NOT met"
}

func quant(s perf.Stats) string {
	return fmt.Sprintf("p50 %s, p99 %s, max %s (n=%d)", usStr(s.P50), usStr(s.P99), usStr(s.Max), s.N)
}

func usStr(d time.Duration) string {
	if d >= 10*time.Millisecond {
		return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond))
	}
	return fmt.Sprintf("%.0f µs", float64(d)/float64(time.Microsecond))
}
