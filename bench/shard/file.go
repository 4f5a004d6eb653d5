// Package shard is what the workers of a sharded bench run or capacity
// search save, and how merge joins it: the JSON of a worker's part (the
// run it belongs to, its shard I/N and every request it offered), reading
// those results back and checking they are the shards of one run, each
// given once, joining their requests into the run one process would have
// recorded, and the send-time skew between the workers. Which requests a
// worker sends is bench/openloop's (openloop.Shard); the commands, their
// flags and the run id are bench's. Errors name the file and the field;
// every one is the user's input, and bench reports them as such.
package shard

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/vllm-prober/vllm-prober/bench/openloop"
	"github.com/vllm-prober/vllm-prober/bench/report"
	"github.com/vllm-prober/vllm-prober/bench/stats"
	"github.com/vllm-prober/vllm-prober/probe"
)

// Parse parses I/N (--shard): a worker's index I in [0, N) of N workers.
// "" is the whole schedule.
func Parse(s string) (openloop.Shard, error) {
	if s == "" {
		return openloop.Shard{}, nil
	}
	is, ns, ok := strings.Cut(s, "/")
	i, errI := strconv.Atoi(is)
	n, errN := strconv.Atoi(ns)
	if !ok || errI != nil || errN != nil || n < 1 || i < 0 || i >= n {
		return openloop.Shard{}, fmt.Errorf("--shard %q: want I/N with 0 <= I < N, e.g. 0/4", s)
	}
	return openloop.Shard{Index: i, Count: n}, nil
}

// String renders s as --shard takes it.
func String(s openloop.Shard) string { return fmt.Sprintf("%d/%d", s.Index, max(s.Count, 1)) }

// File is what a sharded bench worker adds to its saved result under
// "shard": the run it belongs to, its part, and every request it offered
// with what the merge needs to recompute the run's numbers (the ledger
// keeps no inter-token latencies).
type File struct {
	RunID    string    `json:"run_id"`
	Shard    string    `json:"shard"` // I/N
	StartAt  time.Time `json:"start_at"`
	Settings Settings  `json:"settings"`
	Part
}

// Settings are the run's report.Settings in a form JSON keeps.
type Settings struct {
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

// Request is one offered request of a shard.
type Request struct {
	Result   *probe.Result `json:"result"`
	Ended    time.Time     `json:"ended"`
	QueuedNS time.Duration `json:"queued_ns"`
}

// NewFile records a bench worker's run for the merge: runID names the
// run, sh is the worker's shard of it.
func NewFile(runID string, sh openloop.Shard, s report.Settings, run *openloop.Run) *File {
	return &File{RunID: runID, Shard: String(sh), StartAt: run.Start, Settings: toSettings(s), Part: newPart(run)}
}

// toSettings converts s for JSON.
func toSettings(s report.Settings) Settings {
	g := map[string]float64{}
	for key, obj := range map[string]struct {
		has bool
		d   time.Duration
	}{"ttft": {s.Goodput.HasTTFT, s.Goodput.TTFT}, "tpot": {s.Goodput.HasTPOT, s.Goodput.TPOT}, "e2el": {s.Goodput.HasE2EL, s.Goodput.E2EL}} {
		if obj.has {
			g[key] = float64(obj.d) / float64(time.Millisecond)
		}
	}
	return Settings{Backend: s.Backend, Label: s.Label, Model: s.Model, NumPrompts: s.NumPrompts,
		RequestRate: strconv.FormatFloat(s.RequestRate, 'g', -1, 64), Burstiness: strconv.FormatFloat(s.Burstiness, 'g', -1, 64),
		MaxConcurrency: s.MaxConcurrency, Goodput: g, PercentileMetrics: s.PercentileMetrics, Percentiles: s.Percentiles}
}

// Report converts back; errors name the bad field.
func (ss Settings) Report() (report.Settings, error) {
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
	if s.Goodput, err = stats.ParseGoodput(pairs); err != nil {
		return s, fmt.Errorf("goodput_ms: %w", err)
	}
	return s, nil
}
