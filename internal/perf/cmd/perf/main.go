// Command perf runs the prober's own benchmarks (internal/perf) and prints
// the summary table of docs/BENCHMARKS.md: measurement fidelity against the
// simulator's ground truth, open-loop schedule accuracy, the daemon's CPU
// and memory cost, its cost probing a 400-pair fleet, the /metrics scrape cost and the hot paths.
//
//	go run ./internal/perf/cmd/perf            # everything, ~13 minutes
//	go run ./internal/perf/cmd/perf -only cost # one part
//	go run ./internal/perf/cmd/perf -only schedule.workers # bench as worker processes only
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strings"
	"syscall"
	"time"
)

func main() { os.Exit(run()) }

// options are the command-line flags.
type options struct {
	only        map[string]bool
	scale       float64
	binary      string
	costWarmup  time.Duration
	costTime    time.Duration
	fleetWarmup time.Duration
	soakTime    time.Duration
	moduleDir   string
}

func run() int {
	var o options
	only := flag.String("only", "fidelity,schedule,cost,fleet,scrape,hotpaths,soak", "Comma-separated parts to run.")
	flag.Float64Var(&o.scale, "scale", 1, "Multiplier of every run's duration (0.2 for a quick look).")
	flag.StringVar(&o.binary, "binary", "", "vllm-prober binary for the cost run (default: build one).")
	flag.DurationVar(&o.costWarmup, "cost.warmup", 10*time.Second, "Daemon warm-up before the cost is measured.")
	flag.DurationVar(&o.costTime, "cost.duration", 60*time.Second, "How long the cost is measured per case.")
	flag.DurationVar(&o.fleetWarmup, "fleet.warmup", 60*time.Second, "Daemon warm-up before the fleet's cost is measured (every pair sends and every replica is scraped).")
	flag.DurationVar(&o.soakTime, "soak.duration", 30*time.Minute, "How long the soak runs (before -scale).")
	flag.StringVar(&o.moduleDir, "dir", ".", "The module's root directory.")
	cpuProfile := flag.String("cpuprofile", "", "Write a CPU profile of the in-process runs (fidelity, schedule) to this file.")
	flag.Parse()
	if *cpuProfile != "" {
		stopProfile, err := startCPUProfile(*cpuProfile)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer stopProfile()
	}
	o.only = map[string]bool{}
	for _, p := range strings.Split(*only, ",") {
		o.only[strings.TrimSpace(p)] = true
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	fmt.Printf("# vllm-prober perf, %s\n\n", time.Now().UTC().Format("2006-01-02 15:04 UTC"))
	fmt.Printf("machine: %d CPUs (%s), %s, %s/%s, load average %s\n\n", runtime.NumCPU(), cpuModel(), runtime.Version(),
		runtime.GOOS, runtime.GOARCH, loadAverage())
	var rows []row
	steps := []struct {
		name string
		fn   func(context.Context, options) ([]row, error)
	}{
		{"fidelity", runFidelity}, {"schedule", runSchedule}, {"cost", withBinary(runCost)}, {"fleet", withBinary(runFleet)},
		{"scrape", runScrape}, {"hotpaths", runHotPaths}, {"soak", withBinary(runSoak)}, {"schedule.workers", runScheduleWorkers},
	}
	failed := false
	for _, s := range steps {
		if !o.only[s.name] || s.name == "schedule.workers" && o.only["schedule"] {
			continue
		}
		r, err := s.fn(ctx, o)
		if err != nil {
			fmt.Fprintf(os.Stderr, "%s: %v\n", s.name, err)
			failed = true
			continue
		}
		rows = append(rows, r...)
	}
	fmt.Printf("\n## Summary (load average at the end %s)\n\n", loadAverage())
	printTable(os.Stdout, rows)
	if failed {
		return 1
	}
	return 0
}

// buildBinary compiles the daemon for the cost run.
func buildBinary(ctx context.Context, dir string) (string, func(), error) {
	tmp, err := os.MkdirTemp("", "vllm-prober-perf-bin-")
	if err != nil {
		return "", nil, err
	}
	bin := filepath.Join(tmp, "vllm-prober")
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-o", bin, ".")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		os.RemoveAll(tmp)
		return "", nil, fmt.Errorf("go build: %w\n%s", err, out)
	}
	return bin, func() { os.RemoveAll(tmp) }, nil
}

// startCPUProfile profiles this process into path until the returned
// function is called.
func startCPUProfile(path string) (func(), error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("cpu profile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("cpu profile: %w", err)
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}

// cpuModel returns the first "model name" of /proc/cpuinfo.
func cpuModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return "unknown CPU"
	}
	for line := range strings.Lines(string(b)) {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown CPU"
}

// loadAverage returns the three load averages of /proc/loadavg.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}
