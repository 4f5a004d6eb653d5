// Command perf runs the prober's own benchmarks (internal/perf) and prints
// the summary table of docs/BENCHMARKS.md: measurement fidelity against the
// simulator's ground truth, open-loop schedule accuracy, the daemon's CPU
// and memory cost (the sidecar among the cases), its cost probing a
// 400-pair fleet, the /metrics scrape cost, the hot paths and a soak of
// 1,000 pairs under churning reloads. Each part's output starts with the
// time and the machine's load average, and the summary repeats the load
// beside each part's rows. Parts are listed in parts.go.
//
//	go run ./internal/perf/cmd/perf            # everything, ~45 minutes
//	go run ./internal/perf/cmd/perf -scale 0.1 # everything shortened, the soak to 3 minutes
//	go run ./internal/perf/cmd/perf -only cost # one part
//	go run ./internal/perf/cmd/perf -only schedule.workers # bench as worker processes only
//	go run ./internal/perf/cmd/perf -only accuracy -accuracy.rates 10 -trace /tmp/acc # an execution trace per client run
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
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/vllm-prober/vllm-prober/internal/perf"
	"github.com/vllm-prober/vllm-prober/internal/perf/naive"
)

func main() { os.Exit(run()) }

// options are the command-line flags.
type options struct {
	scale       float64
	binary      string
	costWarmup  time.Duration
	costTime    time.Duration
	fleetWarmup time.Duration
	soakTime    time.Duration
	// costBaseline is another binary (e.g. built from main) whose
	// sidecar cost is measured in the same run.
	costBaseline string
	moduleDir    string
	// trace is the prefix of the accuracy part's execution traces, one per
	// client run (perf.AccuracyOptions.Trace); "" = none.
	trace string
	// accuracyRates are the request rates the accuracy part runs.
	accuracyRates string
	// self runs this command again (the cost part's naive client).
	self []string
	// scrape is how the daemons' /metrics is scraped and fetched
	// (-scrape, options.accept).
	scrape string
}

// accept returns the Accept header the daemons' /metrics is scraped and
// fetched with: -scrape's, where "prometheus" asks as Prometheus would for
// the part's configuration: with native histograms on (protobuf) where
// its histograms are native only, which that needs, and by default
// (OpenMetrics) where they have classic buckets.
func (o options) accept(nativeOnly bool) string {
	if o.scrape != "prometheus" {
		return scrapeAccepts[o.scrape]
	}
	if nativeOnly {
		return perf.AcceptProtobuf
	}
	return perf.AcceptOpenMetrics
}

// scrapeFormat is how the daemons' /metrics is scraped (options.accept).
var scrapeFormat = flag.String("scrape", "prometheus", "How the daemons' /metrics is scraped every 15 s and fetched when timed: "+
	"prometheus (as Prometheus would for the part's configuration: protobuf for the scale part's native-only histograms, OpenMetrics elsewhere), "+
	"text (as curl and Go's client ask), openmetrics (as Prometheus asks by default) or protobuf (as Prometheus asks with native histograms on). "+
	"Series and sizes are counted in the text format whatever it is.")

// scrapeAccepts are the values of -scrape but prometheus: the Accept
// header of each.
var scrapeAccepts = map[string]string{"text": "", "openmetrics": perf.AcceptOpenMetrics, "protobuf": perf.AcceptProtobuf}

func run() int {
	var o options
	only := flag.String("only", strings.Join(defaultParts(), ","), "Comma-separated parts to run: "+strings.Join(partNames(), ", ")+".")
	flag.Float64Var(&o.scale, "scale", 1, "Multiplier of every run's duration, the soak's included (0.2 for a quick look).")
	flag.StringVar(&o.binary, "binary", "", "vllm-prober binary for the parts that run the daemon (default: build one).")
	flag.DurationVar(&o.costWarmup, "cost.warmup", 10*time.Second, "Daemon warm-up before the cost is measured.")
	flag.DurationVar(&o.costTime, "cost.duration", 60*time.Second, "How long the cost is measured per case.")
	flag.DurationVar(&o.fleetWarmup, "fleet.warmup", 60*time.Second, "Daemon warm-up before the fleet's cost is measured (every pair sends and every replica is scraped).")
	flag.StringVar(&o.costBaseline, "cost.baseline", "", "Another vllm-prober binary (e.g. built from main) whose 16-token sidecar cost is measured right after this one's.")
	flag.DurationVar(&o.soakTime, "soak.duration", 30*time.Minute, "How long the soak runs (before -scale).")
	flag.StringVar(&o.moduleDir, "dir", ".", "The module's root directory.")
	flag.StringVar(&o.trace, "trace", "", "Record an execution trace of each client run of the accuracy part into PREFIX-<rate>-<round>-<client>.trace.")
	flag.StringVar(&o.accuracyRates, "accuracy.rates", "10,300,1000,2000", "Comma-separated request rates the accuracy part runs, of 10, 300, 1000, 2000.")
	cpuProfile := flag.String("cpuprofile", "", "Write a CPU profile of the in-process runs (fidelity, schedule) to this file.")
	// The cost part runs this command again as the naive client.
	floorClient := flag.String("floor.client", "", "Run only the naive client against this simulator URL until stopped (the cost part's naive client process).")
	floorRate := flag.Float64("floor.rate", 1, "The naive client's requests per second (with -floor.client).")
	floorTokens := flag.Int("floor.tokens", 16, "The naive client's streamed tokens per request (with -floor.client).")
	flag.Parse()
	if _, ok := scrapeAccepts[*scrapeFormat]; !ok && *scrapeFormat != "prometheus" {
		fmt.Fprintf(os.Stderr, "-scrape %q: want prometheus, text, openmetrics or protobuf\n", *scrapeFormat)
		return 2
	}
	o.scrape = *scrapeFormat
	if *floorClient != "" {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		if err := naive.Serve(ctx, *floorClient, *floorRate, *floorTokens); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		return 0
	}
	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	o.self = []string{exe}
	selected, err := selectParts(*only)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	if *cpuProfile != "" {
		stopProfile, err := startCPUProfile(*cpuProfile)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer stopProfile()
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	fmt.Printf("# vllm-prober perf, %s\n\n", time.Now().UTC().Format("2006-01-02 15:04 UTC"))
	fmt.Printf("machine: %s\n\n", machine())
	fmt.Printf("/metrics scraped (-scrape): %s\n\n", o.scrape)
	if o.binary == "" && slices.ContainsFunc(selected, func(p part) bool { return p.daemon }) {
		bin, cleanup, err := buildBinary(ctx, o.moduleDir)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer cleanup()
		o.binary = bin
	}
	rows, failed := runParts(ctx, o, selected)
	fmt.Printf("\n## Summary (%s; load average at the end %s)\n\n", machine(), loadAverage())
	printTable(os.Stdout, rows)
	if failed {
		return 1
	}
	return 0
}

// runParts runs each part in turn, printing the time and the machine's
// load beside its output and recording the load in its rows.
func runParts(ctx context.Context, o options, selected []part) (rows []partRows, failed bool) {
	for _, p := range selected {
		start, loadBefore := time.Now(), loadAverage1()
		fmt.Printf("\n## %s (%s, load average %s)\n\n", p.name, start.UTC().Format("15:04:05 UTC"), loadAverage())
		r, err := p.run(ctx, o)
		loadAfter := loadAverage1()
		fmt.Printf("%s: took %s, load average %s at the end\n", p.name, time.Since(start).Round(time.Second), loadAverage())
		rows = append(rows, partRows{rows: r, loadBefore: loadBefore, loadAfter: loadAfter})
		if err != nil {
			fmt.Fprintf(os.Stderr, "%s: %v\n", p.name, err)
			failed = true
		}
	}
	return rows, failed
}

// buildBinary compiles the daemon once for the parts that run it.
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

// machine describes this machine and Go for the record beside the numbers.
func machine() string {
	return fmt.Sprintf("%d CPUs (%s), %s, %s/%s", runtime.NumCPU(), cpuModel(), runtime.Version(), runtime.GOOS, runtime.GOARCH)
}

// loadAverage1 returns the 1-minute load average of /proc/loadavg.
func loadAverage1() string {
	l, _, _ := strings.Cut(loadAverage(), " ")
	return l
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
