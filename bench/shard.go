package bench

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/vllm-prober/vllm-prober/bench/openloop"
	"github.com/vllm-prober/vllm-prober/bench/report"
	"github.com/vllm-prober/vllm-prober/probe"
)

// parseShard parses --shard I/N: this worker's index I in [0, N) of N
// workers. "" is the whole schedule.
func parseShard(s string) (openloop.Shard, error) {
	if s == "" {
		return openloop.Shard{}, nil
	}
	is, ns, ok := strings.Cut(s, "/")
	i, errI := strconv.Atoi(is)
	n, errN := strconv.Atoi(ns)
	if !ok || errI != nil || errN != nil || n < 1 || i < 0 || i >= n {
		return openloop.Shard{}, usageErr("--shard %q: want I/N with 0 <= I < N, e.g. 0/4", s)
	}
	return openloop.Shard{Index: i, Count: n}, nil
}

// shardString renders s as --shard takes it.
func shardString(s openloop.Shard) string { return fmt.Sprintf("%d/%d", s.Index, max(s.Count, 1)) }

// parseStartAt parses --start-at, an RFC 3339 time; "" is none.
func parseStartAt(s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, usageErr("--start-at %q: want an RFC 3339 time, e.g. 2026-01-02T15:04:05Z", s)
	}
	return t, nil
}

// sharded reports whether o runs one shard of a schedule split among
// workers.
func (o *Options) sharded() bool { return o.Shard.Count > 1 }

// runID identifies a sharded run: a hash of everything that makes the
// workers' schedule and requests the same (the common start, the shard
// count, the arrival process, the dataset, the server and API), so shards
// of different runs, or of workers started with different flags, do not
// merge.
func runID(o *Options) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s|%d|%d|%d|%v|%v|%s|%s|%d|%d|%v|%s|%s|%s|%s|%d|%d",
		o.StartAt.UTC().Format(time.RFC3339Nano), o.Shard.Count, o.Seed, o.NumPrompts, o.RequestRate, o.Burstiness,
		o.DatasetName, o.DatasetPath, o.RandomInputLen, o.RandomOutputLen, o.RandomRangeRatio,
		o.BaseURL, o.Endpoint, o.Backend, o.Model, o.MaxConcurrency, o.RandomPrefixLen)
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// shardFile is what a sharded worker adds to its saved result under
// "shard": the run it belongs to, its part, and every request it offered
// with what the merge needs to recompute the run's numbers (the ledger
// keeps no inter-token latencies).
type shardFile struct {
	RunID    string        `json:"run_id"`
	Shard    string        `json:"shard"` // I/N
	StartAt  time.Time     `json:"start_at"`
	Settings shardSettings `json:"settings"`
	shardPart
}

// shardSettings are the run's Settings in a form JSON keeps.
type shardSettings struct {
	Backend           string             `json:"backend"`
	Label             string             `json:"label"`
	Model             string             `json:"model"`
	NumPrompts        int                `json:"num_prompts"`
	RequestRate       string             `json:"request_rate"` // strconv, so inf survives
	Burstiness        string             `json:"burstiness"`
	MaxConcurrency    int                `json:"max_concurrency"`
	Goodput           map[string]float64 `json:"goodput_ms"`
	PercentileMetrics []string           `json:"percentile_metrics"`
	Percentiles       []float64          `json:"percentiles"`
}

// shardRequest is one offered request of a shard.
type shardRequest struct {
	Result   *probe.Result `json:"result"`
	Ended    time.Time     `json:"ended"`
	QueuedNS time.Duration `json:"queued_ns"`
}

// newShardFile records a worker's run for the merge.
func newShardFile(o *Options, s report.Settings, run *openloop.Run) *shardFile {
	return &shardFile{RunID: runID(o), Shard: shardString(o.Shard), StartAt: run.Start, Settings: toShardSettings(s),
		shardPart: newShardPart(run)}
}

// toShardSettings converts s for JSON.
func toShardSettings(s report.Settings) shardSettings {
	g := map[string]float64{}
	for key, obj := range map[string]struct {
		has bool
		d   time.Duration
	}{"ttft": {s.Goodput.HasTTFT, s.Goodput.TTFT}, "tpot": {s.Goodput.HasTPOT, s.Goodput.TPOT}, "e2el": {s.Goodput.HasE2EL, s.Goodput.E2EL}} {
		if obj.has {
			g[key] = float64(obj.d) / float64(time.Millisecond)
		}
	}
	return shardSettings{Backend: s.Backend, Label: s.Label, Model: s.Model, NumPrompts: s.NumPrompts,
		RequestRate: strconv.FormatFloat(s.RequestRate, 'g', -1, 64), Burstiness: strconv.FormatFloat(s.Burstiness, 'g', -1, 64),
		MaxConcurrency: s.MaxConcurrency, Goodput: g, PercentileMetrics: s.PercentileMetrics, Percentiles: s.Percentiles}
}

// settings converts back; errors name the bad field.
func (ss shardSettings) settings() (report.Settings, error) {
	s := report.Settings{Backend: ss.Backend, Label: ss.Label, Model: ss.Model, NumPrompts: ss.NumPrompts, MaxConcurrency: ss.MaxConcurrency,
		PercentileMetrics: ss.PercentileMetrics, Percentiles: ss.Percentiles}
	var err error
	if s.RequestRate, err = strconv.ParseFloat(ss.RequestRate, 64); err != nil {
		return s, fmt.Errorf("request_rate %q: %w", ss.RequestRate, err)
	}
	if s.Burstiness, err = strconv.ParseFloat(ss.Burstiness, 64); err != nil {
		return s, fmt.Errorf("burstiness %q: %w", ss.Burstiness, err)
	}
	var pairs []string
	for key, ms := range ss.Goodput {
		pairs = append(pairs, key+":"+strconv.FormatFloat(ms, 'g', -1, 64))
	}
	if s.Goodput, err = parseGoodput(pairs); err != nil {
		return s, fmt.Errorf("goodput_ms: %w", err)
	}
	return s, nil
}
