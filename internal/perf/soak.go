package perf

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/vllm-prober/vllm-prober/internal/perf/proc"
	"github.com/vllm-prober/vllm-prober/internal/wait"
)

// SoakOptions configures Soak.
type SoakOptions struct {
	Binary          string // the vllm-prober binary
	Targets, Probes int    // pairs = Targets × Probes, at every moment
	Rate            float64
	Duration        time.Duration
	Windows         int           // Duration is judged in this many equal windows (at least 3)
	ReloadEvery     time.Duration // one churning reload per period
	// ChurnTargets targets and ChurnProbes probes are replaced by new
	// names at every reload: their series go and new ones come.
	ChurnTargets, ChurnProbes int
	SampleEvery               time.Duration
	Log                       io.Writer // a line per sample; nil for none
}

// SoakSample is one reading of the daemon during the soak.
type SoakSample struct {
	At         time.Duration // since the daemon listened
	RSS        int64
	CPU        time.Duration // on-CPU time since the daemon started
	Goroutines int
	Series     int // sample lines of /metrics
	Reloads    int // successful reloads so far
}

// SoakWindow summarises the samples of one window.
type SoakWindow struct {
	Start, End               time.Duration
	MinRSS, MaxRSS           int64
	MaxGoroutines            int
	MinSeries, MaxSeries     int
	CorePercent              float64 // the daemon's CPU over the window, percent of one core
	Samples, ReloadsInWindow int
}

// SoakResult is what Soak saw.
type SoakResult struct {
	Pairs   int
	Samples []SoakSample
	Windows []SoakWindow
	Reloads int
	// Growth is the last window's highest RSS over the second window's,
	// minus one; Flat is Growth ≤ FlatTolerance (SoakFlat).
	Growth float64
	Flat   bool
}

// FlatTolerance is how much the last window's highest RSS may exceed the
// second window's for the soak to count as flat: the first window holds
// the start-up and the filling of the status page's sample window, after
// which memory must stop growing.
const FlatTolerance = 0.10

// Soak runs the daemon (a process of opts.Binary) on opts.Targets targets
// × opts.Probes probes served by one in-process simulator listening on one
// port per target, with the lean series budget (histograms ttft and e2el,
// native only) and the ledger on, for opts.Duration. Every
// opts.ReloadEvery it rewrites the configuration with ChurnTargets targets
// and ChurnProbes probes renamed and reloads it (POST /-/reload); every
// opts.SampleEvery it reads the daemon's RSS and CPU (/proc) and its
// goroutines and series (/metrics).
func Soak(ctx context.Context, opts SoakOptions) (SoakResult, error) {
	out := SoakResult{Pairs: opts.Targets * opts.Probes}
	if opts.Windows < 3 || opts.SampleEvery <= 0 || opts.ReloadEvery <= 0 || opts.Duration < time.Duration(opts.Windows)*opts.SampleEvery {
		return out, fmt.Errorf("soak: need at least 3 windows of at least one sample each, got %d windows, %s sampled every %s (reload every %s)",
			opts.Windows, opts.Duration, opts.SampleEvery, opts.ReloadEvery)
	}
	dir, err := os.MkdirTemp("", "vllm-prober-soak-")
	if err != nil {
		return out, fmt.Errorf("temp dir: %w", err)
	}
	defer os.RemoveAll(dir)
	addrs, stop, err := startReplicas(opts.Targets)
	if err != nil {
		return out, err
	}
	defer stop()
	fleet := newChurn(dir, addrs, opts)
	d, err := startDaemon(ctx, opts.Binary, dir, fleet.config(), "--web.enable-lifecycle")
	if err != nil {
		return out, err
	}
	defer d.Stop()
	if err := soakLoop(ctx, &out, d, fleet, opts); err != nil {
		return out, err
	}
	out.Windows = soakWindows(out.Samples, opts.Duration, opts.Windows)
	out.Growth, out.Flat = soakVerdict(out.Windows)
	return out, nil
}

// soakLoop reloads and samples until opts.Duration has passed.
func soakLoop(ctx context.Context, out *SoakResult, d *proc.Process, fleet *churn, opts SoakOptions) error {
	base := "http://" + d.Addr
	start := time.Now()
	nextReload, nextSample := opts.ReloadEvery, opts.SampleEvery
	for {
		next := min(nextReload, nextSample)
		if next > opts.Duration {
			return nil
		}
		if err := wait.Sleep(ctx, next-time.Since(start)); err != nil {
			return err
		}
		if next == nextReload {
			nextReload += opts.ReloadEvery
			fleet.rotate()
			if err := reloadConfig(base, filepath.Join(fleet.dir, daemonConfigFile), fleet.config()); err != nil {
				return fmt.Errorf("reload %d: %w", out.Reloads+1, err)
			}
			out.Reloads++
		}
		if next == nextSample {
			nextSample += opts.SampleEvery
			s, err := sampleSoak(d.PID(), base+"/metrics")
			if err != nil {
				return err
			}
			s.At, s.Reloads = time.Since(start), out.Reloads
			out.Samples = append(out.Samples, s)
			if opts.Log != nil {
				fmt.Fprintf(opts.Log, "soak %s: RSS %.1f MiB, %d goroutines, %d series, CPU %s, %d reloads\n",
					s.At.Round(time.Second), float64(s.RSS)/(1<<20), s.Goroutines, s.Series, s.CPU.Round(time.Millisecond), s.Reloads)
			}
		}
	}
}

// reloadConfig writes cfg to path and has the daemon load it.
func reloadConfig(base, path, cfg string) error {
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		return fmt.Errorf("write config: %w", err)
	}
	resp, err := http.Post(base+"/-/reload", "", nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("POST /-/reload: %s: %s", resp.Status, bytes.TrimSpace(body))
	}
	return nil
}

// sampleSoak reads the daemon's RSS and CPU from /proc and its goroutines
// and series from /metrics.
func sampleSoak(pid int, metricsURL string) (SoakSample, error) {
	var s SoakSample
	p, err := proc.Read(pid)
	if err != nil {
		return s, err
	}
	s.RSS, s.CPU = p.RSS, p.CPU
	body, _, _, err := fetch(metricsURL, "")
	if err != nil {
		return s, err
	}
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(nil, 1<<20)
	goroutines := -1
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		s.Series++
		if v, ok := strings.CutPrefix(line, "go_goroutines "); ok {
			if goroutines, err = strconv.Atoi(v); err != nil {
				return s, fmt.Errorf("parse %q: %w", line, err)
			}
		}
	}
	if err := sc.Err(); err != nil {
		return s, fmt.Errorf("read /metrics: %w", err)
	}
	if goroutines < 0 {
		return s, errors.New("/metrics has no go_goroutines")
	}
	s.Goroutines = goroutines
	return s, nil
}

// soakWindows splits the samples into n equal windows of d.
func soakWindows(samples []SoakSample, d time.Duration, n int) []SoakWindow {
	windows := make([]SoakWindow, n)
	for i := range windows {
		windows[i].Start, windows[i].End = d*time.Duration(i)/time.Duration(n), d*time.Duration(i+1)/time.Duration(n)
	}
	var prev *SoakSample
	for i := range samples {
		s := &samples[i]
		w := &windows[min(int(s.At*time.Duration(n)/d), n-1)]
		if w.Samples == 0 || s.RSS < w.MinRSS {
			w.MinRSS = s.RSS
		}
		if w.Samples == 0 || s.Series < w.MinSeries {
			w.MinSeries = s.Series
		}
		w.MaxRSS, w.MaxGoroutines, w.MaxSeries = max(w.MaxRSS, s.RSS), max(w.MaxGoroutines, s.Goroutines), max(w.MaxSeries, s.Series)
		w.Samples++
		if prev != nil {
			w.CorePercent += 100 * (s.CPU - prev.CPU).Seconds()
			w.ReloadsInWindow += s.Reloads - prev.Reloads
		}
		prev = s
	}
	for i := range windows {
		windows[i].CorePercent /= (windows[i].End - windows[i].Start).Seconds()
	}
	return windows
}

// soakVerdict compares the last window's highest RSS with the second's.
func soakVerdict(w []SoakWindow) (growth float64, flat bool) {
	second, last := w[1].MaxRSS, w[len(w)-1].MaxRSS
	if second == 0 {
		return 0, false
	}
	growth = float64(last)/float64(second) - 1
	return growth, growth <= FlatTolerance
}

// churn is the soak's changing configuration: the current target and
// probe names, renamed a few at a time.
type churn struct {
	dir              string
	addrs            []string
	opts             SoakOptions
	targets          []string // current names; targets[i] is served on addrs[i]
	probes           []string
	nextT, nextP     int // counters of new names
	oldestT, oldestP int // index of the next name to replace
}

// newChurn returns the first configuration's names.
func newChurn(dir string, addrs []string, opts SoakOptions) *churn {
	c := &churn{dir: dir, addrs: addrs, opts: opts}
	for range opts.Targets {
		c.targets = append(c.targets, c.targetName())
	}
	for range opts.Probes {
		c.probes = append(c.probes, c.probeName())
	}
	return c
}

func (c *churn) targetName() string { c.nextT++; return fmt.Sprintf("t-%05d", c.nextT) }

func (c *churn) probeName() string { c.nextP++; return fmt.Sprintf("p-%04d", c.nextP) }

// rotate renames the ChurnTargets and ChurnProbes oldest names.
func (c *churn) rotate() {
	for range c.opts.ChurnTargets {
		c.targets[c.oldestT] = c.targetName()
		c.oldestT = (c.oldestT + 1) % len(c.targets)
	}
	for range c.opts.ChurnProbes {
		c.probes[c.oldestP] = c.probeName()
		c.oldestP = (c.oldestP + 1) % len(c.probes)
	}
}

// config renders the current names: chat probes with 16-token streamed
// answers, SLOs set, the lean histograms without classic buckets, the
// ledger on (rotated, so the disk does not fill).
func (c *churn) config() string {
	var b strings.Builder
	fmt.Fprintf(&b, "global:\n  ledger: {path: %q, max_size_mb: 16, max_files: 2}\n  histograms: [ttft, e2el]\n  classic_buckets: false\ntargets:\n",
		filepath.Join(c.dir, "ledger.jsonl"))
	for i, name := range c.targets {
		fmt.Fprintf(&b, "  - name: %s\n    url: http://%s\n    model: sim-llama\n", name, c.addrs[i])
	}
	b.WriteString("probes:\n")
	for _, name := range c.probes {
		fmt.Fprintf(&b, "  - name: %s\n    rate: %g\n    api: chat\n    workload: {random: {input_tokens: 32, output_tokens: 16}}\n"+
			"    request: {ignore_eos: true}\n    slo: {ttft: 1s, tpot: 100ms, e2el: 10s}\n", name, c.opts.Rate)
	}
	return b.String()
}
