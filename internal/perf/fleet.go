package perf

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/vllm-prober/vllm-prober/internal/perf/proc"
	"github.com/vllm-prober/vllm-prober/simulator"
)

// FleetOptions configures Fleet.
type FleetOptions struct {
	Binary                    string // the vllm-prober binary
	Targets, Replicas, Probes int    // Replicas per target
	Rate                      float64
	Warmup, Duration          time.Duration
	ScrapeEvery               time.Duration // /metrics scrapes, from the warm-up on (0 = never)
	Fetches                   int           // timed /metrics and status page fetches after measuring
	NoServerMetrics           bool          // metrics_path "": the replicas' /metrics are not scraped
	Accept                    string        // how the scrapes and timed fetches ask for /metrics (CostOptions.Accept)
}

// FleetResult is what the daemon used probing a fleet, and how fast it
// answered /metrics and its status page afterwards.
type FleetResult struct {
	CostResult
	Replicas int // replicas seen in /metrics (label replica set)
	Pairs    int // (target, probe, replica) pairs seen in /metrics
	Series   int // every sample line of /metrics
	// SeriesPerPair is the vllm_probe_* series of pairs (label probe set)
	// per pair; histograms count one series per bucket plus _sum and
	// _count, as Prometheus stores them.
	SeriesPerPair float64
	// ServerSeries are the targets' and replicas' re-exported server
	// metrics: series with a target label outside vllm_probe_* and
	// vllm_prober_*.
	ServerSeries int
	Metrics      Stats  // time to fetch and read /metrics
	MetricsBytes int    // the size of the last timed /metrics answer, in the format asked for
	MetricsType  string // its Content-Type
	Status       Stats  // time to fetch and read the status page
	StatusBytes  int
	// MetricsCPU and StatusCPU are the daemon's CPU time per fetch of
	// /metrics and of the status page (its probes' work meanwhile
	// included, a small part at these rates).
	MetricsCPU, StatusCPU time.Duration
}

// Fleet runs opts.Targets fleet targets of opts.Replicas replicas each,
// found by file_sd (one file per target listing its replicas' addresses),
// with opts.Probes probes at opts.Rate requests/s per replica pair. The
// replicas are one in-process simulator (one engine, so they share its
// batch) listening on Targets × Replicas loopback ports: every replica has
// its own address, connections and /metrics scrape, which is what the
// prober's cost depends on. The daemon is a process of opts.Binary,
// measured as Cost measures it; then opts.Fetches sequential fetches of
// /metrics and of the status page are timed.
func Fleet(ctx context.Context, opts FleetOptions) (FleetResult, error) {
	out := FleetResult{CostResult: CostResult{Name: fmt.Sprintf("%d×%d replicas×%d @ %g/s", opts.Targets, opts.Replicas, opts.Probes, opts.Rate),
		Targets: opts.Targets, Probes: opts.Probes, Rate: opts.Rate}}
	err := runDaemon(ctx, &out, daemonRun{
		Binary: opts.Binary, Servers: opts.Targets * opts.Replicas,
		Config:  func(dir string, addrs []string) (string, error) { return fleetConfig(dir, addrs, opts) },
		Measure: CostOptions{Warmup: opts.Warmup, Duration: opts.Duration, ScrapeEvery: opts.ScrapeEvery, Accept: opts.Accept},
		Fetches: opts.Fetches,
	})
	return out, err
}

// daemonRun is one measured run of the daemon binary against simulated
// servers on their own loopback addresses.
type daemonRun struct {
	Binary  string
	Servers int // loopback addresses of the in-process simulator
	// Config returns the daemon's configuration; dir is the run's
	// temporary directory, for the ledger and any file_sd files.
	Config  func(dir string, addrs []string) (string, error)
	Measure CostOptions // Warmup, Duration and ScrapeEvery
	Fetches int         // timed /metrics and status page fetches after measuring
}

// runDaemon starts r.Servers simulated servers and the daemon on
// r.Config, measures the daemon as Cost does and then times r.Fetches
// sequential fetches of /metrics and of the status page.
func runDaemon(ctx context.Context, out *FleetResult, r daemonRun) error {
	return runDaemons(ctx, []*FleetResult{out}, []string{r.Binary}, r)
}

// runDaemons is runDaemon for one daemon of each binary at once: each has
// its own directory and the same configuration, all probe the same
// simulated servers and are measured over the same window, so that one
// machine's load falls on all of them alike; then each one's fetches are
// timed in turn. outs[i] is binaries[i]'s result.
func runDaemons(ctx context.Context, outs []*FleetResult, binaries []string, r daemonRun) error {
	addrs, stop, err := startReplicas(r.Servers)
	if err != nil {
		return err
	}
	defer stop()
	bases := make([]string, len(binaries))
	for i, bin := range binaries {
		dir, err := os.MkdirTemp("", "vllm-prober-fleet-")
		if err != nil {
			return fmt.Errorf("temp dir: %w", err)
		}
		defer os.RemoveAll(dir)
		cfg, err := r.Config(dir, addrs)
		if err != nil {
			return err
		}
		d, err := startDaemon(ctx, bin, dir, cfg)
		if err != nil {
			return err
		}
		defer d.Stop()
		outs[i].DaemonPID, bases[i] = d.PID(), "http://"+d.Addr
	}
	errs := make([]error, len(binaries))
	var wg sync.WaitGroup
	for i := range binaries {
		wg.Go(func() { errs[i] = measure(ctx, &outs[i].CostResult, bases[i]+"/metrics", r.Measure) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	for i := range binaries {
		if err := timeFetches(outs[i], bases[i], r.Fetches, r.Measure.Accept); err != nil {
			return err
		}
	}
	return nil
}

// startReplicas serves one simulator on n loopback ports and returns their
// addresses and the function that stops it.
func startReplicas(n int) ([]string, func(), error) {
	o := simulator.DefaultOptions()
	o.Seed, o.Jitter, o.MaxNumSeqs, o.DecodePerSeq = 1, 0, 1024, 20*time.Microsecond
	sim, err := simulator.New(o)
	if err != nil {
		return nil, nil, fmt.Errorf("simulator: %w", err)
	}
	srv := sim.HTTPServer()
	stop := func() {
		srv.Close()
		sim.Close()
	}
	addrs := make([]string, 0, n)
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			stop()
			return nil, nil, fmt.Errorf("replica listener: %w", err)
		}
		addrs = append(addrs, ln.Addr().String())
		go func() {
			if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				fmt.Fprintf(os.Stderr, "replica %s: %v\n", ln.Addr(), err)
			}
		}()
	}
	return addrs, stop, nil
}

// fleetConfig writes one file_sd file per target to dir and returns the
// daemon's config. The histograms are the default: lean for replicas.
func fleetConfig(dir string, addrs []string, o FleetOptions) (string, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "global:\n  ledger: {path: %q}\ntargets:\n", filepath.Join(dir, "ledger.jsonl"))
	for i := range o.Targets {
		file := filepath.Join(dir, fmt.Sprintf("fleet-%02d.json", i))
		groups := []map[string]any{{"targets": addrs[i*o.Replicas : (i+1)*o.Replicas], "labels": map[string]string{"zone": "perf"}}}
		data, err := json.Marshal(groups)
		if err != nil {
			return "", fmt.Errorf("encode %s: %w", file, err)
		}
		if err := os.WriteFile(file, data, 0o600); err != nil {
			return "", fmt.Errorf("write %s: %w", file, err)
		}
		fmt.Fprintf(&b, "  - name: fleet-%02d\n    model: sim-llama\n    discovery: {file_sd: {files: [%q]}}\n", i, file)
		if o.NoServerMetrics {
			b.WriteString("    metrics_path: \"\"\n")
		}
	}
	writeProbes(&b, o.Probes, o.Rate, 64)
	return b.String(), nil
}

// timeFetches times n fetches of /metrics (asking as accept says), then
// n of the status page, measuring the daemon's CPU over each batch, and
// counts the series of /metrics in the text format.
func timeFetches(out *FleetResult, base string, n int, accept string) error {
	var metrics, status []time.Duration
	var err error
	if out.MetricsCPU, err = fetchBatch(out.DaemonPID, n, func() error {
		b, ctype, took, err := fetch(base+"/metrics", accept)
		metrics, out.MetricsBytes, out.MetricsType = append(metrics, took), len(b), ctype
		return err
	}); err != nil {
		return err
	}
	if out.StatusCPU, err = fetchBatch(out.DaemonPID, n, func() error {
		b, _, took, err := fetch(base+"/", "")
		status, out.StatusBytes = append(status, took), len(b)
		return err
	}); err != nil {
		return err
	}
	out.Metrics, out.Status = Summarize(metrics), Summarize(status)
	body, _, _, err := fetch(base+"/metrics", "")
	if err != nil {
		return err
	}
	return countSeries(out, body)
}

// fetchBatch runs fetch n times and returns the daemon's CPU time per
// fetch: what an answer costs whatever else keeps the machine busy, where
// the fetch's own time includes waiting for a core.
func fetchBatch(pid, n int, fetch func() error) (time.Duration, error) {
	before, err := proc.Read(pid)
	if err != nil {
		return 0, err
	}
	for range n {
		if err := fetch(); err != nil {
			return 0, err
		}
	}
	after, err := proc.Read(pid)
	if err != nil || n == 0 {
		return 0, err
	}
	return (after.CPU - before.CPU) / time.Duration(n), nil
}

// fetch GETs url with accept as its Accept header (none if "") and reads
// the whole answer; it returns the answer's Content-Type too.
func fetch(url, accept string) ([]byte, string, time.Duration, error) {
	start := time.Now()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return nil, "", 0, err
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, "", 0, fmt.Errorf("fetch %s: %w", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, "", 0, fmt.Errorf("fetch %s: %w", url, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, "", 0, fmt.Errorf("fetch %s: %s", url, resp.Status)
	}
	return body, resp.Header.Get("Content-Type"), time.Since(start), nil
}

// countSeries fills Series, ServerSeries, Pairs, Replicas and
// SeriesPerPair from an exposition.
func countSeries(out *FleetResult, body []byte) error {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(string(body)))
	if err != nil {
		return fmt.Errorf("parse /metrics: %w", err)
	}
	pairs, replicas := map[string]bool{}, map[string]bool{}
	pairSeries := 0
	for name, f := range families {
		for _, m := range f.GetMetric() {
			n := 1
			switch {
			case m.GetHistogram() != nil:
				n = len(m.GetHistogram().GetBucket()) + 2
			case m.GetSummary() != nil:
				n = len(m.GetSummary().GetQuantile()) + 2
			}
			out.Series += n
			l := labelMap(m.GetLabel())
			if l["target"] == "" {
				continue
			}
			if !strings.HasPrefix(name, "vllm_probe") {
				out.ServerSeries += n
				continue
			}
			if l["replica"] != "" {
				replicas[l["target"]+"/"+l["replica"]] = true
			}
			if l["probe"] != "" {
				pairs[l["target"]+"/"+l["probe"]+"/"+l["replica"]] = true
				pairSeries += n
			}
		}
	}
	out.Pairs, out.Replicas = len(pairs), len(replicas)
	if out.Pairs == 0 {
		return errors.New("/metrics holds no pair")
	}
	out.SeriesPerPair = float64(pairSeries) / float64(out.Pairs)
	return nil
}

// labelMap returns a series' labels by name.
func labelMap(pairs []*dto.LabelPair) map[string]string {
	l := make(map[string]string, len(pairs))
	for _, p := range pairs {
		l[p.GetName()] = p.GetValue()
	}
	return l
}
