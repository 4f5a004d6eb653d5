package bench

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/alecthomas/kingpin/v2"
)

// BenchFlags holds the raw values of the bench command's flags, named as
// vllm bench serve names them.
type BenchFlags struct {
	runFlags
	o                 Options
	percentiles       string
	percentileMetrics string
}

// runFlags holds the raw values of the flags bench and capacity share and
// convert alike: the server address, the goodput pairs, the ready-check
// wait and the shard of a distributed run.
type runFlags struct {
	host           string
	port           int
	goodput        []string
	extraGoodput   []string
	readySec       int
	shard, startAt string
}

// apply converts the shared flags into o; errors wrap ErrUsage.
func (f *runFlags) apply(o *Options) error {
	if o.BaseURL == "" {
		o.BaseURL = "http://" + f.host + ":" + strconv.Itoa(f.port)
	}
	if len(f.extraGoodput) > 0 && len(f.goodput) == 0 {
		return usageErr("unexpected argument %q", f.extraGoodput[0])
	}
	var err error
	if o.Goodput, err = parseGoodput(append(append([]string(nil), f.goodput...), f.extraGoodput...)); err != nil {
		return err
	}
	if f.readySec < 0 {
		return usageErr("--ready-check-timeout-sec %d must not be negative", f.readySec)
	}
	o.ReadyCheckTimeout = time.Duration(f.readySec) * time.Second
	if o.Shard, err = parseShard(f.shard); err != nil {
		return err
	}
	if o.StartAt, err = parseStartAt(f.startAt); err != nil {
		return err
	}
	o.APIKey = os.Getenv("OPENAI_API_KEY")
	return nil
}

// RegisterBenchFlags adds bench's flags to cmd.
func RegisterBenchFlags(cmd *kingpin.CmdClause) *BenchFlags {
	f := &BenchFlags{}
	o := &f.o
	cmd.Flag("base-url", "Server base URL (overrides --host/--port).").StringVar(&o.BaseURL)
	registerServerFlags(cmd, o, &f.host, &f.port)
	cmd.Flag("label", "Prefix of the saved result's file name; default: the backend.").StringVar(&o.Label)
	registerWorkloadFlags(cmd, o)
	cmd.Flag("num-prompts", "Number of prompts to send.").Default("1000").IntVar(&o.NumPrompts)
	cmd.Flag("request-rate", "Requests per second; inf sends all at once.").Default("inf").Float64Var(&o.RequestRate)
	cmd.Flag("burstiness", "Gamma shape of the arrival gaps: 1 is Poisson, inf constant.").Default("1.0").Float64Var(&o.Burstiness)
	cmd.Flag("max-concurrency", "Maximum requests in flight; 0 = no cap.").Default("0").IntVar(&o.MaxConcurrency)
	cmd.Flag("seed", "Seed of the dataset and the arrival times.").Default("0").Int64Var(&o.Seed)
	cmd.Flag("shard", "Send only the requests whose index is I modulo N (I/N, from 0), one worker of N; implies --save-result.").PlaceHolder("I/N").StringVar(&f.shard)
	cmd.Flag("start-at", "Start the schedule at this RFC 3339 time, common to every worker of a sharded run.").PlaceHolder("RFC3339").StringVar(&f.startAt)
	cmd.Flag("ignore-eos", "Send ignore_eos (always on for the random dataset).").BoolVar(&o.IgnoreEOS)
	cmd.Flag("goodput", `Goodput objectives as "KEY:VALUE" pairs in ms, keys ttft, tpot, e2el.`).StringsVar(&f.goodput)
	cmd.Arg("goodput-pairs", "Further --goodput KEY:VALUE pairs, as vLLM's nargs accepts them.").Hidden().StringsVar(&f.extraGoodput)
	cmd.Flag("metric-percentiles", "Comma-separated percentiles to report.").Default("99").StringVar(&f.percentiles)
	cmd.Flag("percentile-metrics", "Comma-separated metrics to report: ttft,tpot,itl,e2el.").Default("ttft,tpot,itl").StringVar(&f.percentileMetrics)
	cmd.Flag("num-warmups", "Warm-up requests sent before the run, not counted.").Default("0").IntVar(&o.NumWarmups)
	cmd.Flag("ready-check-timeout-sec", "Seconds to wait for the server to answer; 0 = one try.").Default("0").IntVar(&f.readySec)
	cmd.Flag("timeout", "Bound on one request.").Default("6h").DurationVar(&o.Timeout)
	cmd.Flag("save-result", "Save the result as JSON (and the ledger beside it).").BoolVar(&o.SaveResult)
	cmd.Flag("save-detailed", "Add per-request lists to the saved JSON.").BoolVar(&o.SaveDetailed)
	cmd.Flag("result-dir", "Directory of the saved result.").StringVar(&o.ResultDir)
	cmd.Flag("result-filename", "File name of the saved result.").StringVar(&o.ResultFilename)
	cmd.Flag("ledger", "Ledger file (JSON Lines, one record per offered request); default: beside the saved result.").StringVar(&o.LedgerPath)
	cmd.Flag("plot", "Write an SVG of the TTFT and ITL distributions and of requests over time to this file.").StringVar(&o.Plot)
	return f
}

// registerServerFlags adds the flags naming the server, its API and model
// (--base-url, whose help differs, is each command's own).
func registerServerFlags(cmd *kingpin.CmdClause, o *Options, host *string, port *int) {
	cmd.Flag("host", "Server host when --base-url is not given.").Default("127.0.0.1").StringVar(host)
	cmd.Flag("port", "Server port when --base-url is not given.").Default("8000").IntVar(port)
	cmd.Flag("endpoint", "API endpoint.").Default("/v1/completions").StringVar(&o.Endpoint)
	cmd.Flag("backend", "openai (completions) or openai-chat.").Default(backendOpenAI).EnumVar(&o.Backend, backendOpenAI, backendOpenAIChat)
	cmd.Flag("model", "Model name; default: the first id from /v1/models.").StringVar(&o.Model)
}

// registerWorkloadFlags adds the dataset flags.
func registerWorkloadFlags(cmd *kingpin.CmdClause, o *Options) {
	cmd.Flag("dataset-name", "random, sharegpt or custom (JSONL).").Default(datasetRandom).StringVar(&o.DatasetName)
	cmd.Flag("dataset-path", "Dataset file: ShareGPT JSON or JSON Lines.").StringVar(&o.DatasetPath)
	cmd.Flag("random-input-len", "Input tokens per request (random dataset).").Default("1024").IntVar(&o.RandomInputLen)
	cmd.Flag("random-output-len", "Output tokens per request (random and custom datasets).").Default("128").IntVar(&o.RandomOutputLen)
	cmd.Flag("random-range-ratio", "Lengths are drawn uniformly from [L(1-r), L(1+r)].").Default("0.0").Float64Var(&o.RandomRangeRatio)
	cmd.Flag("random-prefix-len", "Tokens of a prefix every prompt starts with, before its --random-input-len random ones (random dataset).").Default("0").IntVar(&o.RandomPrefixLen)
}

// Options converts and checks the parsed flags; errors wrap ErrUsage.
func (f *BenchFlags) Options() (Options, error) {
	o := f.o
	if err := f.apply(&o); err != nil {
		return o, err
	}
	var err error
	if o.MetricPercentiles, err = parsePercentiles(f.percentiles); err != nil {
		return o, err
	}
	if o.PercentileMetrics, err = parseMetrics(f.percentileMetrics); err != nil {
		return o, err
	}
	o.SaveResult = o.SaveResult || o.sharded()
	return o, o.validate()
}

// ExitCode maps a command's error to its exit status: 0 for none, 2 for
// bad flags or input, 1 otherwise.
func ExitCode(err error) int {
	switch {
	case err == nil:
		return 0
	case errors.Is(err, ErrUsage):
		return 2
	}
	return 1
}

// Message renders an error for the terminal as one line, without the
// ErrUsage prefix.
func Message(cmd string, err error) string {
	msg := strings.TrimPrefix(err.Error(), ErrUsage.Error()+": ")
	return fmt.Sprintf("vllm-prober %s: error: %s", cmd, strings.ReplaceAll(msg, "\n", "; "))
}
