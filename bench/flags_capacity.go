package bench

import (
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/alecthomas/kingpin/v2"

	"github.com/vllm-prober/vllm-prober/bench/capacity"
	"github.com/vllm-prober/vllm-prober/bench/stats"
)

// CapacityFlags holds the raw values of the capacity command's flags.
type CapacityFlags struct {
	runFlags
	o          CapacityOptions
	configFile string
	rates      string
	start      float64
	maxRate    float64
	factor     float64
	step       float64
	// workloadSet records which bench workload flags the command line
	// gave, so that --config.file (whose probe brings its own workload)
	// can refuse them instead of ignoring them.
	workloadSet map[string]*bool
}

// workloadFlags are capacity's bench workload flags: they describe the
// requests of flag mode, and a --config.file probe replaces them all.
var workloadFlags = []string{"base-url", "host", "port", "endpoint", "backend", "model",
	"dataset-name", "dataset-path", "random-input-len", "random-output-len", "random-range-ratio", "random-prefix-len",
	"ignore-eos", "goodput", "timeout", "burstiness"}

// RegisterCapacityFlags adds capacity's flags to cmd.
func RegisterCapacityFlags(cmd *kingpin.CmdClause) *CapacityFlags {
	f := &CapacityFlags{}
	o, w := &f.o, &f.o.Workload
	cmd.Flag("config.file", "Config file holding the probe to rate (else the bench workload flags are used).").StringVar(&f.configFile)
	cmd.Flag("probe", "Name of the probe in --config.file.").StringVar(&o.ProbeName)
	cmd.Flag("target", "Name of the target in --config.file; default: the first that runs the probe.").StringVar(&o.TargetName)
	cmd.Flag("base-url", "Server base URL (overrides --host/--port), without --config.file.").StringVar(&w.BaseURL)
	registerServerFlags(cmd, w, &f.host, &f.port)
	registerWorkloadFlags(cmd, w)
	cmd.Flag("ignore-eos", "Send ignore_eos (always on for the random dataset).").BoolVar(&w.IgnoreEOS)
	cmd.Flag("goodput", `Per-request objectives "KEY:VALUE" in ms (ttft, tpot, e2el): the judge's SLOs.`).StringsVar(&f.goodput)
	cmd.Arg("goodput-pairs", "Further --goodput KEY:VALUE pairs, as vLLM's nargs accepts them.").Hidden().StringsVar(&f.extraGoodput)
	cmd.Flag("timeout", "Bound on one request (flag mode).").Default("30s").DurationVar(&w.Timeout)
	cmd.Flag("ready-check-timeout-sec", "Seconds to wait for the server to answer; 0 = one try.").Default("0").IntVar(&f.readySec)
	cmd.Flag("burstiness", "Gamma shape of the arrival gaps in flag mode (probes use their own).").Default("1.0").Float64Var(&o.Burstiness)
	cmd.Flag("seed", "Seed of the arrival times and the dataset.").Default("0").Int64Var(&o.Seed)
	cmd.Flag("rates", "Comma-separated offered rates (req/s); overrides the staircase flags.").StringVar(&f.rates)
	cmd.Flag("start-rate", "First offered rate of the staircase (req/s).").Default("1").Float64Var(&f.start)
	cmd.Flag("max-rate", "Highest offered rate of the staircase (req/s).").Default("64").Float64Var(&f.maxRate)
	cmd.Flag("factor", "Geometric staircase: each level multiplies the rate by this.").Default("2").Float64Var(&f.factor)
	cmd.Flag("step", "Linear staircase: each level adds this rate (overrides --factor).").Default("0").Float64Var(&f.step)
	cmd.Flag("level-duration", "Measured duration of each level.").Default("30s").DurationVar(&o.Duration)
	cmd.Flag("warmup", "Warm-up at the level's rate before it is measured.").Default("5s").DurationVar(&o.Warmup)
	cmd.Flag("drain", "How long requests may stay outstanding after a level's last send; 0 = each until its timeout.").Default("0s").DurationVar(&o.Drain)
	cmd.Flag("repeats", "Repeats per level; a level passes when every repeat does.").Default("2").IntVar(&o.Repeats)
	cmd.Flag("order", "Order of the runs: ascending, interleaved (neighbouring levels alternate: 8, 16, 8, 16) or random (seeded).").
		Default(capacity.OrderInterleaved).EnumVar(&o.Order, capacity.Orders...)
	cmd.Flag("resolution", "Bisect until lowest fail - highest pass <= this (req/s); 0 = a quarter of the first gap.").Default("0").Float64Var(&o.Resolution)
	cmd.Flag("pass-acceptance", "Pass rule: minimum acceptance ratio.").Default("0.99").Float64Var(&o.Rule.MinAcceptance)
	cmd.Flag("pass-percentile", "Pass rule: the latency percentile that must meet each SLO.").Default("99").Float64Var(&o.Rule.Percentile)
	cmd.Flag("steady-ratio", "Pass rule: a repeat is not_steady when its last third's median TTFT (E2EL for an embeddings probe) exceeds this times the first third's (and --steady-growth); 0 = no check.").
		Default("2").Float64Var(&o.Rule.SteadyRatio)
	cmd.Flag("steady-growth", "Pass rule: the growth of the median TTFT (E2EL for an embeddings probe) from the first to the last third always tolerated.").
		Default("50ms").DurationVar(&o.Rule.SteadyGrowth)
	cmd.Flag("shard", "Run this worker's part (I/N, from 0) of every level of a fixed staircase, one worker of N; needs --start-at.").PlaceHolder("I/N").StringVar(&f.shard)
	cmd.Flag("start-at", "Start the staircase at this RFC 3339 time and every run at a time computed from it: a fixed staircase, no bisection.").PlaceHolder("RFC3339").StringVar(&f.startAt)
	cmd.Flag("output-dir", "Directory of the JSON report, SVG chart and ledger.").Default(".").StringVar(&o.OutputDir)
	f.workloadSet = map[string]*bool{}
	for _, name := range workloadFlags {
		set := new(bool)
		cmd.GetFlag(name).IsSetByUser(set)
		f.workloadSet[name] = set
	}
	return f
}

// ConfigFile returns --config.file ("" in flag mode).
func (f *CapacityFlags) ConfigFile() string { return f.configFile }

// Options converts and checks the parsed flags; errors wrap ErrUsage. The
// caller loads ConfigFile into Config when it is set.
func (f *CapacityFlags) Options() (CapacityOptions, error) {
	o := f.o
	o.RuleFromProbe = true
	w := &o.Workload
	if f.configFile != "" && o.ProbeName == "" {
		return o, usageErr("--config.file needs --probe")
	}
	if f.configFile == "" && (o.ProbeName != "" || o.TargetName != "") {
		return o, usageErr("--probe and --target need --config.file")
	}
	if f.configFile != "" {
		for _, name := range workloadFlags {
			if set := f.workloadSet[name]; set != nil && *set {
				return o, usageErr("--%s is a bench workload flag, not used with --config.file, whose probe %q sends its own requests to its target: remove it", name, o.ProbeName)
			}
		}
	}
	if err := f.apply(w); err != nil {
		return o, err
	}
	w.MetricPercentiles, w.PercentileMetrics = []float64{50, o.Rule.Percentile}, stats.RequestMetrics
	var list []float64
	if strings.TrimSpace(f.rates) != "" {
		for _, s := range strings.Split(f.rates, ",") {
			r, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
			if err != nil {
				return o, usageErr("--rates %q: want comma-separated numbers", f.rates)
			}
			list = append(list, r)
		}
	}
	var err error
	if o.Rates, err = staircase(list, f.start, f.maxRate, f.factor, f.step); err != nil {
		return o, err
	}
	return o, o.validate()
}

// staircase builds the offered rates: the given list (sorted), or from
// start up to max multiplying by factor (> 1) or adding step (> 0).
func staircase(list []float64, start, maxRate, factor, step float64) ([]float64, error) {
	if len(list) > 0 {
		out := slices.Clone(list)
		slices.Sort(out)
		for _, r := range out {
			if !(r > 0) || math.IsInf(r, 0) {
				return nil, usageErr("--rates: every rate must be a positive number, got %v", r)
			}
		}
		return slices.Compact(out), nil
	}
	switch {
	case !(start > 0) || math.IsInf(start, 0):
		return nil, usageErr("--start-rate %v must be positive", start)
	case !(maxRate >= start) || math.IsInf(maxRate, 0):
		return nil, usageErr("--max-rate %v must be at least --start-rate %v", maxRate, start)
	case step < 0 || (step == 0 && !(factor > 1)):
		return nil, usageErr("need --factor > 1 (geometric) or --step > 0 (linear)")
	}
	var out []float64
	for r := start; r <= maxRate*(1+1e-9) && len(out) < 1000; {
		out = append(out, r)
		if step > 0 {
			r += step
		} else {
			r *= factor
		}
	}
	return out, nil
}
