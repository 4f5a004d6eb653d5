package bench

import (
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/common/model"

	"github.com/vllm-prober/vllm-prober/bench/openloop"
	"github.com/vllm-prober/vllm-prober/bench/shard"
	"github.com/vllm-prober/vllm-prober/bench/stats"
)

// ErrUsage marks errors in the user's flags; the command exits 2 on them.
var ErrUsage = errors.New("invalid arguments")

// usageErr wraps a flag error so callers can tell it apart with
// errors.Is(err, ErrUsage).
func usageErr(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrUsage, fmt.Sprintf(format, args...))
}

// Backends of Options.Backend, as vllm bench serve names them.
const (
	backendOpenAI     = "openai"
	backendOpenAIChat = "openai-chat"
)

// Dataset names of Options.DatasetName.
const (
	datasetRandom   = "random"
	datasetShareGPT = "sharegpt"
	datasetCustom   = "custom" // JSONL of {"prompt"} or {"messages"} lines
)

// judgeSLO is an objective as the probe's judge takes it, where 0 means
// none: an objective of 0 given to --goodput becomes the least duration,
// which every measured latency exceeds.
func judgeSLO(has bool, d time.Duration) model.Duration {
	if has && d <= 0 {
		return model.Duration(1)
	}
	return model.Duration(d)
}

// parseGoodput parses --goodput (stats.ParseGoodput); errors wrap ErrUsage.
func parseGoodput(values []string) (stats.Goodput, error) {
	g, err := stats.ParseGoodput(values)
	if err != nil {
		return g, fmt.Errorf("%w: %w", ErrUsage, err)
	}
	return g, nil
}

// parsePercentiles parses --metric-percentiles: comma-separated numbers in
// (0, 100], e.g. "50,90,99.9".
func parsePercentiles(s string) ([]float64, error) {
	var out []float64
	for _, f := range strings.Split(s, ",") {
		p, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil || !(p > 0 && p <= 100) {
			return nil, usageErr("--metric-percentiles %q: want comma-separated percentiles in (0, 100]", s)
		}
		out = append(out, p)
	}
	return out, nil
}

// parseMetrics parses --percentile-metrics: a comma-separated subset of
// ttft, tpot, itl, e2el, client_queue_time, e2el_including_client_queue.
func parseMetrics(s string) ([]string, error) {
	var out []string
	for _, f := range strings.Split(s, ",") {
		m := strings.TrimSpace(f)
		if !slices.Contains(stats.AllMetrics, m) {
			return nil, usageErr("--percentile-metrics %q: want a comma-separated subset of %s", s, strings.Join(stats.AllMetrics, ","))
		}
		out = append(out, m)
	}
	return out, nil
}

// Options are the settings of one bench run, named after vllm bench
// serve's flags.
type Options struct {
	BaseURL  string // scheme://host:port, without the endpoint
	Endpoint string // e.g. /v1/completions
	Backend  string // openai | openai-chat
	Model    string // "" = first id from GET /v1/models
	Label    string // file name prefix of the saved result; "" = backend

	DatasetName      string
	DatasetPath      string
	RandomInputLen   int
	RandomOutputLen  int
	RandomRangeRatio float64
	// RandomPrefixLen is the shared prefix of every random prompt, in
	// tokens, on top of RandomInputLen as in vLLM's random dataset.
	RandomPrefixLen int
	NumPrompts      int

	RequestRate    float64 // math.Inf(1) = all at once
	Burstiness     float64
	MaxConcurrency int // 0 = no cap
	Seed           int64
	IgnoreEOS      bool
	// Shard is this worker's part of the schedule (--shard I/N); the
	// zero Shard is the whole of it.
	Shard openloop.Shard
	// StartAt is the schedule's time zero (--start-at), common to the
	// workers of a sharded run; zero = when the run starts.
	StartAt    time.Time
	NumWarmups int

	Goodput           stats.Goodput
	MetricPercentiles []float64
	PercentileMetrics []string

	ReadyCheckTimeout time.Duration // 0 = skip the ready check
	Timeout           time.Duration // bound on one request
	APIKey            string        // sent as a bearer token; from OPENAI_API_KEY

	SaveResult     bool
	SaveDetailed   bool
	ResultDir      string
	ResultFilename string
	LedgerPath     string // "" = beside the saved result, or none
	// Plot is where --plot writes the run's SVG (plot.Run); "" = none.
	Plot string
}

// validate checks o and returns an error wrapping ErrUsage that names the
// first bad flag.
func (o *Options) validate() error {
	u, err := url.Parse(o.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return usageErr("--base-url %q: want http(s)://host:port", o.BaseURL)
	}
	checks := []struct {
		bad bool
		msg string
	}{
		{!strings.HasPrefix(o.Endpoint, "/"), fmt.Sprintf("--endpoint %q must start with /", o.Endpoint)},
		{o.Backend != backendOpenAI && o.Backend != backendOpenAIChat, fmt.Sprintf("--backend %q: want openai or openai-chat", o.Backend)},
		{o.chat() && !strings.HasSuffix(o.Endpoint, "chat/completions"), fmt.Sprintf("--backend openai-chat needs a chat endpoint (--endpoint /v1/chat/completions), got %q", o.Endpoint)},
		{!o.chat() && !strings.HasSuffix(o.Endpoint, "completions"), fmt.Sprintf("--backend openai needs a completions endpoint, got %q", o.Endpoint)},
		{!slices.Contains([]string{datasetRandom, datasetShareGPT, datasetCustom}, o.DatasetName), fmt.Sprintf("--dataset-name %q: want random, sharegpt or custom", o.DatasetName)},
		{o.DatasetName != datasetRandom && o.DatasetPath == "", fmt.Sprintf("--dataset-name %s needs --dataset-path", o.DatasetName)},
		{o.RandomInputLen < 1, fmt.Sprintf("--random-input-len %d must be at least 1", o.RandomInputLen)},
		{o.RandomOutputLen < 1, fmt.Sprintf("--random-output-len %d must be at least 1", o.RandomOutputLen)},
		{!(o.RandomRangeRatio >= 0 && o.RandomRangeRatio < 1), fmt.Sprintf("--random-range-ratio %v must be in [0, 1)", o.RandomRangeRatio)},
		{o.RandomPrefixLen < 0, fmt.Sprintf("--random-prefix-len %d must not be negative", o.RandomPrefixLen)},
		{o.NumPrompts < 1, fmt.Sprintf("--num-prompts %d must be at least 1", o.NumPrompts)},
		{!(o.RequestRate > 0), fmt.Sprintf("--request-rate %v must be positive (or inf)", o.RequestRate)},
		{!(o.Burstiness > 0), fmt.Sprintf("--burstiness %v must be positive (or inf)", o.Burstiness)},
		{o.MaxConcurrency < 0, fmt.Sprintf("--max-concurrency %d must not be negative", o.MaxConcurrency)},
		{o.NumWarmups < 0, fmt.Sprintf("--num-warmups %d must not be negative", o.NumWarmups)},
		{o.ReadyCheckTimeout < 0, "--ready-check-timeout-sec must not be negative"},
		{o.Timeout <= 0, fmt.Sprintf("--timeout %v must be positive", o.Timeout)},
		{len(o.MetricPercentiles) == 0, "--metric-percentiles is empty"},
		{len(o.PercentileMetrics) == 0, "--percentile-metrics is empty"},
		{o.sharded() && o.StartAt.IsZero(), fmt.Sprintf("--shard %s needs --start-at, the workers' common start", shard.String(o.Shard))},
	}
	for _, c := range checks {
		if c.bad {
			return usageErr("%s", c.msg)
		}
	}
	return nil
}

// chat reports whether the run uses the chat completions API.
func (o *Options) chat() bool { return o.Backend == backendOpenAIChat }
