// Package config holds the vllm-prober configuration schema: plain data,
// defaults, and validation that names file, line and field. Strict YAML
// decoding is config/strictyaml's; config tells it the schema's defaults.
package config

import (
	"regexp"

	promconfig "github.com/prometheus/common/config"
	"github.com/prometheus/common/model"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/vllm-prober/vllm-prober/discovery"
)

// Config is the whole configuration file.
type Config struct {
	Global  Global   `yaml:"global"`
	Targets []Target `yaml:"targets"`
	Probes  []Probe  `yaml:"probes"`
}

// Global holds settings shared by every target and probe.
type Global struct {
	Ledger        Ledger        `yaml:"ledger"`
	HistoryLimit  int           `yaml:"history_limit"`
	ServerMetrics ServerMetrics `yaml:"server_metrics"`
	// Histograms and ClassicBuckets are the default of every probe's keys
	// of the same name (docs/design.md, Series budget).
	Histograms     []string `yaml:"histograms"`
	ClassicBuckets *bool    `yaml:"classic_buckets"`
}

// Ledger configures the append-only JSON Lines ledger. An empty Path
// disables the file (records are still counted and kept in history).
type Ledger struct {
	Path       string `yaml:"path"`
	MaxSizeMB  int    `yaml:"max_size_mb"`
	MaxFiles   int    `yaml:"max_files"`
	RecordText string `yaml:"record_text"` // none | failures | all
}

// Record text modes of Ledger.RecordText.
const (
	RecordTextNone     = "none"
	RecordTextFailures = "failures"
	RecordTextAll      = "all"
)

// ServerMetrics configures scraping of each target's own /metrics.
type ServerMetrics struct {
	Interval model.Duration `yaml:"interval"`
	Timeout  model.Duration `yaml:"timeout"`
	// Allow selects the metric families that are re-exported. Anchored.
	Allow Regexp `yaml:"allow"`
}

// Target is one OpenAI-compatible server, or a fleet of them: URL is the
// server (or the fleet's gateway), Discovery finds the fleet's replicas
// (docs/design.md, Fleets). A target has URL, Discovery or both.
type Target struct {
	Name             string                      `yaml:"name"`
	URL              string                      `yaml:"url"`
	Discovery        *discovery.Config           `yaml:"discovery,omitempty"`
	Scheme           string                      `yaml:"scheme,omitempty"`      // of replica URLs: http or https
	PathPrefix       string                      `yaml:"path_prefix,omitempty"` // of replica URLs: "" or /...
	MaxReplicas      int                         `yaml:"max_replicas,omitempty"`
	Model            string                      `yaml:"model"`
	MetricsPath      string                      `yaml:"metrics_path"`
	HTTPClientConfig promconfig.HTTPClientConfig `yaml:"http_client_config"`
	// Probes lists the probe names run against this target; empty means all.
	Probes []string `yaml:"probes"`
	// Line is the line of the target in the file, for error messages.
	Line int `yaml:"-"`
}

// API kinds of Probe.API.
const (
	APIChat        = "chat"
	APICompletions = "completions"
	// APIEmbeddings posts the workload's text to /v1/embeddings, without
	// streaming: no tokens are generated (docs/design.md, "Embeddings probes").
	APIEmbeddings = "embeddings"
)

// Probe is one kind of request sent to targets, with its contract.
type Probe struct {
	Name string `yaml:"name"`
	API  string `yaml:"api"`
	// Rate is the offered load in requests per second, open loop.
	Rate float64 `yaml:"rate"`
	// Burstiness is the gamma shape of the gaps; 1 is Poisson and
	// math.Inf(1) ("inf" in YAML) means constant gaps.
	Burstiness  float64        `yaml:"burstiness"`
	MaxInFlight int            `yaml:"max_in_flight"`
	Timeout     model.Duration `yaml:"timeout"`
	Request     Request        `yaml:"request"`
	Workload    Workload       `yaml:"workload"`
	SLO         SLO            `yaml:"slo"`
	Quality     Quality        `yaml:"quality"`
	Objective   float64        `yaml:"objective"`
	// Histograms selects the latency histograms the probe's pairs export
	// (names in Histograms); ClassicBuckets false exports them as native
	// histograms only. Unset, both take global's; nil Histograms selects
	// all and nil ClassicBuckets means true (HistogramSelection).
	Histograms     []string `yaml:"histograms"`
	ClassicBuckets *bool    `yaml:"classic_buckets"`
	// RateSplit divides Rate across a target's current replicas instead of
	// sending Rate to each (docs/design.md, Fleets).
	RateSplit bool `yaml:"rate_split"`
	// Fingerprint, when set, makes a prompts probe an output drift canary
	// (docs/design.md, "Output fingerprint"); nil = none.
	Fingerprint *Fingerprint `yaml:"fingerprint,omitempty"`
	// HistogramsWritten says the file chose Histograms (the probe's key or
	// global.histograms): replica pairs then keep it instead of the lean
	// selection.
	HistogramsWritten bool `yaml:"-"`
	Line              int  `yaml:"-"`
}

// Fingerprint configures the output fingerprint of a prompts probe: the
// hash of the first Tokens output tokens of each prompt's answer, and how
// many consecutive requests of a prompt confirm a new value. A block
// written in the file starts from DefaultFingerprint.
type Fingerprint struct {
	Tokens  int `yaml:"tokens"`
	Confirm int `yaml:"confirm"`
}

// MarshalYAML leaves request.max_tokens out of a probe with a random
// workload, where output_tokens sets it, and of an embeddings probe, which
// generates nothing: both refuse the key, and Config.String stays a
// loadable config.
func (p Probe) MarshalYAML() (any, error) {
	type plain Probe
	if p.Workload.Random != nil || p.API == APIEmbeddings {
		p.Request.MaxTokens = 0
	}
	return plain(p), nil
}

// Request holds sampling parameters sent with every request of a probe.
type Request struct {
	MaxTokens   int            `yaml:"max_tokens,omitempty"`
	Temperature float64        `yaml:"temperature"`
	IgnoreEOS   bool           `yaml:"ignore_eos"`
	Extra       map[string]any `yaml:"extra"` // merged into the JSON body
}

// Workload says what prompts a probe sends; exactly one kind is set.
type Workload struct {
	Random  *RandomWorkload `yaml:"random,omitempty"`
	Prompts []Prompt        `yaml:"prompts,omitempty"`
	File    string          `yaml:"file,omitempty"` // resolved relative to the config file
}

// RandomWorkload generates prompts of a given token length, as vLLM's
// random dataset does.
type RandomWorkload struct {
	InputTokens  int     `yaml:"input_tokens"`
	OutputTokens int     `yaml:"output_tokens"`
	RangeRatio   float64 `yaml:"range_ratio"`
	Seed         int64   `yaml:"seed"`
	// PrefixTokens starts every prompt with the same prefix of this many
	// tokens, drawn from Seed, before its InputTokens random ones (vLLM's
	// --random-prefix-len); 0 = none.
	PrefixTokens int `yaml:"prefix_tokens"`
}

// Prompt is one fixed request: Prompt for completions, Messages for chat.
type Prompt struct {
	Prompt   string    `yaml:"prompt"`
	Messages []Message `yaml:"messages"`
	Expect   Expect    `yaml:"expect"`
	// Seed, when set, is sent as the request's seed.
	Seed *int64 `yaml:"seed,omitempty"`
}

// Message is one chat message.
type Message struct {
	Role    string `yaml:"role" json:"role"`
	Content string `yaml:"content" json:"content"`
}

// Expect holds per-prompt quality checks.
type Expect struct {
	Regex    Regexp `yaml:"regex"`
	Contains string `yaml:"contains"`
}

// SLO holds per-request latency objectives; zero means no objective.
type SLO struct {
	TTFT model.Duration `yaml:"ttft"`
	TPOT model.Duration `yaml:"tpot"`
	E2EL model.Duration `yaml:"e2el"`
	// TTFA is the time to the first answer token, after any reasoning.
	TTFA model.Duration `yaml:"ttfa"`
}

// Quality holds the checks applied to every response of a probe.
type Quality struct {
	Model           string   `yaml:"model"`
	FinishReasons   []string `yaml:"finish_reasons"`
	MinOutputTokens int      `yaml:"min_output_tokens"`
	MaxOutputTokens int      `yaml:"max_output_tokens"`
	Regex           Regexp   `yaml:"regex"`
	// JSONSchema is a path to a JSON Schema file (relative to the config
	// file) the generated text must satisfy; "" disables the check.
	JSONSchema string `yaml:"json_schema"`
	// Schema is JSONSchema compiled once when the config was loaded, so a
	// reload reads an edited schema file and nothing outlives the config;
	// nil for a Probe built in code (client.New compiles it then).
	Schema *jsonschema.Schema `yaml:"-"`
	// JSON requires the generated text to be valid JSON.
	JSON bool `yaml:"json"`
	// EmbeddingDim is the length an embeddings probe's vector must have,
	// every value a finite number; 0 disables the check.
	EmbeddingDim int `yaml:"embedding_dim,omitempty"`
	// ToolCall requires the answer to call a function (chat probes only).
	ToolCall *ToolCallCheck `yaml:"tool_call,omitempty"`
}

// ToolCallCheck is quality.tool_call: the answer must contain a call of
// function Name whose assembled arguments are JSON satisfying the schema
// at ArgumentsSchema (relative to the config file; "" = any JSON).
type ToolCallCheck struct {
	Name            string `yaml:"name"`
	ArgumentsSchema string `yaml:"arguments_schema"`
	// Schema is ArgumentsSchema compiled when the config was loaded, as
	// Quality.Schema is; nil for a Probe built in code (client.New
	// compiles it then).
	Schema *jsonschema.Schema `yaml:"-"`
}

// Regexp is a regular expression that keeps its source text. The zero
// value matches nothing and is "unset".
type Regexp struct {
	*regexp.Regexp
	Source string
}
