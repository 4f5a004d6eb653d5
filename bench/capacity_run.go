package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/vllm-prober/vllm-prober/bench/capacity"
	"github.com/vllm-prober/vllm-prober/bench/plot"
	"github.com/vllm-prober/vllm-prober/bench/pyfmt"
	"github.com/vllm-prober/vllm-prober/bench/report"
	"github.com/vllm-prober/vllm-prober/bench/shard"
	"github.com/vllm-prober/vllm-prober/config"
	"github.com/vllm-prober/vllm-prober/probe"
	"github.com/vllm-prober/vllm-prober/probe/ledger"
)

// CapacityOptions configures a capacity search. The workload is either a
// configured probe (Config, ProbeName, TargetName) sent by the probe
// package's Requester and judged by the probe's own contract (its
// max_in_flight included), or the bench workload flags (Workload) sent by
// the same Requester in vllm bench serve's mode.
type CapacityOptions struct {
	Config     *config.Config // nil = use Workload
	ProbeName  string
	TargetName string // "" = the first target that runs the probe
	Workload   Options

	Rates      []float64
	Repeats    int
	Order      string // one of capacity.Orders; "" = interleaved
	Resolution float64
	Duration   time.Duration // measured part of each level
	Warmup     time.Duration
	Drain      time.Duration
	Burstiness float64 // flag mode only; probes use their own
	Seed       int64
	Rule       capacity.PassRule
	// RuleFromProbe fills the rule's objectives from the probe's SLO when
	// the rule names none.
	RuleFromProbe bool

	OutputDir string // where the JSON, SVG and ledger go
	Stamp     string // file name stamp; "" = the start time
}

// CapacityOutcome is a finished search and where its files went.
type CapacityOutcome struct {
	Search                      *capacity.Search
	JSONPath, SVGPath, LedgerOf string
	// ShardPath is a sharded worker's result for the merge ("" unsharded).
	ShardPath string
}

// validate checks the search settings; errors wrap ErrUsage.
func (o *CapacityOptions) validate() error {
	switch {
	case len(o.Rates) == 0:
		return usageErr("no offered rates to run")
	case o.Repeats < 1:
		return usageErr("--repeats %d must be at least 1", o.Repeats)
	case o.Duration <= 0:
		return usageErr("--level-duration %v must be positive", o.Duration)
	case o.Warmup < 0 || o.Drain < 0 || o.Resolution < 0:
		return usageErr("--warmup, --drain and --resolution must not be negative")
	case !(o.Rule.MinAcceptance >= 0 && o.Rule.MinAcceptance <= 1):
		return usageErr("--pass-acceptance %v must be in [0, 1]", o.Rule.MinAcceptance)
	case !(o.Rule.Percentile > 0 && o.Rule.Percentile <= 100):
		return usageErr("--pass-percentile %v must be in (0, 100]", o.Rule.Percentile)
	case !(o.Rule.SteadyRatio == 0 || o.Rule.SteadyRatio >= 1) || o.Rule.SteadyGrowth < 0:
		return usageErr("--steady-ratio %v must be 0 (off) or at least 1, --steady-growth not negative", o.Rule.SteadyRatio)
	case o.Order != "" && !slices.Contains(capacity.Orders, o.Order):
		return usageErr("--order %q: want one of %s", o.Order, strings.Join(capacity.Orders, ", "))
	case o.Config == nil && !(o.Burstiness > 0):
		return usageErr("--burstiness %v must be positive (or inf)", o.Burstiness)
	case o.Workload.sharded() && o.Workload.StartAt.IsZero():
		return usageErr("--shard %s needs --start-at, the workers' common start", shard.String(o.Workload.Shard))
	}
	return nil
}

// Capacity runs the search, prints the table and the rated capacity, and
// writes the JSON report, the SVG chart and the ledger into OutputDir.
func Capacity(ctx context.Context, o CapacityOptions, env Env) (*CapacityOutcome, error) {
	env.defaults()
	if err := o.validate(); err != nil {
		return nil, err
	}
	if o.Order == "" {
		o.Order = capacity.OrderInterleaved
	}
	setup, err := capacitySender(ctx, &o, env)
	if err != nil {
		return nil, err
	}
	defer setup.sender.Close()
	target, probeName := setup.target, setup.probe
	if o.Stamp == "" {
		o.Stamp = env.Now().Format("20060102-150405")
		if start := o.Workload.StartAt; !start.IsZero() {
			o.Stamp = start.UTC().Format("20060102-150405") // the same for every worker of a sharded search
		}
	}
	base := filepath.Join(o.OutputDir, "capacity-"+o.Stamp)
	w := &o.Workload
	if w.sharded() {
		base += fmt.Sprintf("-shard%dof%d", w.Shard.Index, w.Shard.Count)
	}
	out := &CapacityOutcome{JSONPath: base + ".json", SVGPath: base + ".svg", LedgerOf: base + ".ledger.jsonl"}
	lg, err := ledger.Open(config.Ledger{Path: out.LedgerOf, RecordText: config.RecordTextFailures}, env.Logger)
	if err != nil {
		return nil, err // ledger.Open names the ledger
	}
	header := capacity.Header{Target: target, Probe: probeName, Server: setup.server, Burstiness: setup.burstiness, Seed: o.Seed,
		Timeout: setup.timeout, ReadyCheck: o.Workload.ReadyCheckTimeout, Warmup: o.Warmup, Duration: o.Duration, Drain: o.Drain,
		Repeats: o.Repeats, Order: o.Order, Rule: o.Rule.String()}
	capacity.PrintHeader(env.Stdout, header)
	part := fixedStaircase(env.Stdout, &o, header)
	if part != nil {
		out.ShardPath = base + ".shard.json"
	}
	bar := newProgress(env.Progress, -1, "capacity")
	var written atomic.Int64
	level := newLevelFunc(levelOptions{Target: target, Probe: probeName, Sender: setup.sender, Burstiness: setup.burstiness,
		MaxInFlight: setup.maxInFlight, Timeout: setup.timeout,
		Duration: o.Duration, Warmup: o.Warmup, Drain: o.Drain, Seed: o.Seed, Ledger: lg, Now: env.Now,
		Percentiles: levelPercentiles(o.Rule),
		OnFinish:    func(*probe.Result) { bar.Add(1) }, OnLedger: func(*probe.Result) { written.Add(1) },
		Start: w.StartAt, Shard: w.Shard, OnRun: part.Add})
	search, err := capacity.Run(ctx, capacity.Options{Rates: o.Rates, Repeats: o.Repeats, Resolution: o.Resolution, Rule: o.Rule,
		Order: o.Order, Seed: o.Seed, Fixed: !w.StartAt.IsZero(),
		OnRepeat: func(r capacity.Repeat) {
			bar.Describe(fmt.Sprintf("capacity: %s req/s repeat %d %s", pyfmt.Float(r.Rate, 2), r.Index+1, passWord(r.Pass)))
			env.Logger.Info("level repeat done", "offered_rate", r.Rate, "repeat", r.Index+1, "pass", r.Pass,
				"acceptance", r.Metrics.Acceptance, "why", strings.Join(r.Why, "; "))
		}}, level)
	bar.Finish()
	if cerr := lg.Close(); cerr != nil {
		env.Logger.Warn("ledger incomplete", "path", out.LedgerOf, "err", cerr)
	}
	out.Search = search
	if search != nil && len(search.Repeats) > 0 {
		capacity.PrintTable(env.Stdout, search, o.Rule)
		if part == nil {
			capacity.PrintVerdict(env.Stdout, search)
		} else {
			fmt.Fprintf(env.Stdout, "This worker's share of each run only: merge the %d shard results for the search's table and verdict.\n",
				w.Shard.Count)
		}
		if werr := writeCapacityFiles(out, capacitySettings(o), o.Rule, header); werr != nil {
			return out, errors.Join(err, werr)
		}
		fmt.Fprintf(env.Stdout, "Report: %s\nChart: %s\nLedger: %s (%d requests)\n", out.JSONPath, out.SVGPath, out.LedgerOf, written.Load())
	}
	if part != nil && len(part.Runs) > 0 {
		if werr := shard.WriteCapacity(out.ShardPath, part); werr != nil {
			return out, errors.Join(err, werr)
		}
		fmt.Fprintf(env.Stdout, "Shard result: %s (%d runs)\n", out.ShardPath, len(part.Runs))
	}
	return out, err
}

func passWord(ok bool) string {
	if ok {
		return "pass"
	}
	return "FAIL"
}

// capacitySettings describes the search in its JSON report.
func capacitySettings(o CapacityOptions) map[string]any {
	settings := map[string]any{"rates": o.Rates, "resolution": o.Resolution}
	if w := o.Workload; o.Config == nil {
		settings["workload"] = map[string]any{"base_url": w.BaseURL, "endpoint": w.Endpoint, "backend": w.Backend,
			"model": w.Model, "dataset_name": w.DatasetName, "dataset_path": w.DatasetPath, "random_input_len": w.RandomInputLen,
			"random_output_len": w.RandomOutputLen, "random_range_ratio": w.RandomRangeRatio, "random_prefix_len": w.RandomPrefixLen}
	}
	return settings
}

// writeCapacityFiles writes the JSON report and the chart.
func writeCapacityFiles(out *CapacityOutcome, settings map[string]any, rule capacity.PassRule, h capacity.Header) error {
	b, err := capacity.Marshal(out.Search, &h, settings)
	if err != nil {
		return err
	}
	if err := report.WriteFile(out.JSONPath, report.Bytes(b)); err != nil {
		return fmt.Errorf("write capacity report: %w", err)
	}
	err = report.WriteFile(out.SVGPath, func(w io.Writer) error {
		return plot.Capacity(w, out.Search, rule, fmt.Sprintf("Capacity of %s / %s", h.Target, h.Probe))
	})
	if err != nil {
		return fmt.Errorf("write chart: %w", err)
	}
	return nil
}
