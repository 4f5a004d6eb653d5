// Package simulator is an in-process stand-in for a vLLM OpenAI-compatible
// server. It speaks vLLM's exact wire formats (SSE chunks, error bodies,
// /metrics names, types, labels and buckets), runs a step-based batch
// scheduler as a latency model, injects faults on demand and can record the
// true write time of every streamed event as ground truth for the prober's
// accuracy.
//
// It is used by `vllm-prober simulate`, `vllm-prober demo`, the tests of the
// other packages and the accuracy benchmarks. It never imports probe or
// collector.
package simulator

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/vllm-prober/vllm-prober/simulator/engine"
	"github.com/vllm-prober/vllm-prober/simulator/fault"
)

// Faults are the fault rates and extra latencies of a Server
// (simulator/fault).
type Faults = fault.Config

// Default durations of the timed faults when their duration is left at 0.
const (
	DefaultSlowHeadersDelay = fault.DefaultSlowHeadersDelay
	DefaultStallDuration    = fault.DefaultStallDuration
)

// Options configures a Server. Start from DefaultOptions.
type Options struct {
	// Model is the served model name (vLLM's --served-model-name).
	Model string
	// MaxModelLen bounds prompt plus output tokens of one sequence.
	MaxModelLen int
	// Seed makes ids, generated text, jitter and fault decisions deterministic.
	Seed int64
	// APIKey, when set, is required as a Bearer token on /v1 paths.
	APIKey string
	// Config is the engine's latency model: batch and KV cache sizes,
	// prefix caching, stream interval and step costs.
	engine.Config

	// ReasoningTokens makes the server a reasoning model behind vLLM's
	// reasoning parser: every chat answer starts with this many reasoning
	// tokens, streamed as `delta.reasoning`, counted in completion_tokens and
	// reported in usage.completion_tokens_details.reasoning_tokens. 0 turns
	// reasoning off.
	ReasoningTokens int
	// EmbeddingDim is the length of the vectors POST /v1/embeddings returns.
	EmbeddingDim int

	// PerRequestMetrics attaches vLLM's per-request `metrics` object
	// (--enable-per-request-metrics) to the final usage chunk and to
	// non-streaming responses.
	PerRequestMetrics bool
	// EnableRequestIDHeaders echoes X-Request-Id on responses
	// (vLLM's --enable-request-id-headers).
	EnableRequestIDHeaders bool
	// MaxBodyBytes bounds a request body; larger bodies get a 400.
	MaxBodyBytes int64
	// KeepAlive is how long the server keeps an idle keep-alive
	// connection open before it closes it: vLLM's uvicorn
	// timeout_keep_alive (VLLM_HTTP_TIMEOUT_KEEP_ALIVE, 5 s by default).
	// 0 keeps idle connections open.
	KeepAlive time.Duration

	// Trace records, per request, its arrival and the write time of every
	// event, readable through GET /sim/trace and Server.Trace.
	Trace bool
	// TraceLimit bounds the number of trace records kept (oldest dropped).
	TraceLimit int

	// Faults are the initial fault rates; SetFaults and POST /sim/faults
	// change them at runtime.
	Faults Faults
	// Version is reported by GET /version and in system_fingerprint.
	Version string
	// Logger receives the simulator's logs; nil discards them.
	Logger *slog.Logger
}

// DefaultEmbeddingDim is the default length of embedding vectors, that of
// small sentence-embedding models.
const DefaultEmbeddingDim = 384

// maxEmbeddingDim bounds the embedding length (the largest models' 8192,
// with room).
const maxEmbeddingDim = 1 << 16

// DefaultKeepAlive is vLLM's default keep-alive timeout of its HTTP
// server (uvicorn's timeout_keep_alive, VLLM_HTTP_TIMEOUT_KEEP_ALIVE).
const DefaultKeepAlive = 5 * time.Second

// DefaultOptions returns a latency model that looks like a small model on
// one GPU: idle TTFT of about 20 ms for a 100-token prompt, ITL of about
// 13 ms growing with the batch, 32 concurrent sequences.
func DefaultOptions() Options {
	return Options{
		Model:       "sim-llama",
		MaxModelLen: 8192,
		Seed:        0,
		Config: engine.Config{
			MaxNumSeqs:      32,
			StreamInterval:  1,
			PrefillBase:     15 * time.Millisecond,
			PrefillPerToken: 50 * time.Microsecond,
			DecodeBase:      12 * time.Millisecond,
			DecodePerSeq:    500 * time.Microsecond,
			Jitter:          0.05,
			PrefixCaching:   true,
			KVCacheTokens:   262144,
		},
		EmbeddingDim:      DefaultEmbeddingDim,
		PerRequestMetrics: true,
		MaxBodyBytes:      16 << 20,
		KeepAlive:         DefaultKeepAlive,
		TraceLimit:        10000,
		Version:           "0.26.0",
	}
}

// validate checks o and fills zero values that have safe defaults.
func (o *Options) validate() error {
	d := DefaultOptions()
	if o.Model == "" {
		o.Model = d.Model
	}
	if o.Version == "" {
		o.Version = d.Version
	}
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = d.MaxBodyBytes
	}
	if o.TraceLimit <= 0 {
		o.TraceLimit = d.TraceLimit
	}
	if o.StreamInterval <= 0 {
		o.StreamInterval = 1
	}
	if o.EmbeddingDim == 0 {
		o.EmbeddingDim = d.EmbeddingDim
	}
	var errs []error
	if o.ReasoningTokens < 0 {
		errs = append(errs, fmt.Errorf("reasoning tokens %d: must not be negative", o.ReasoningTokens))
	}
	if o.EmbeddingDim < 1 || o.EmbeddingDim > maxEmbeddingDim {
		errs = append(errs, fmt.Errorf("embedding dim %d: must be in [1, %d]", o.EmbeddingDim, maxEmbeddingDim))
	}
	if o.MaxModelLen < 2 {
		errs = append(errs, fmt.Errorf("max model len %d: must be at least 2", o.MaxModelLen))
	}
	if o.MaxNumSeqs < 1 {
		errs = append(errs, fmt.Errorf("max num seqs %d: must be at least 1", o.MaxNumSeqs))
	}
	if o.KVCacheTokens <= 0 {
		o.KVCacheTokens = max(d.KVCacheTokens, o.MaxModelLen)
	}
	if o.KVCacheTokens < o.MaxModelLen {
		errs = append(errs, fmt.Errorf("kv cache tokens %d: must hold one sequence of max model len %d", o.KVCacheTokens, o.MaxModelLen))
	}
	if o.KeepAlive < 0 {
		errs = append(errs, fmt.Errorf("keep-alive timeout %s: must not be negative (0 keeps idle connections open)", o.KeepAlive))
	}
	if o.Jitter < 0 || o.Jitter >= 1 {
		errs = append(errs, fmt.Errorf("jitter %g: must be in [0, 1)", o.Jitter))
	}
	for name, v := range map[string]time.Duration{"prefill base": o.PrefillBase, "prefill per token": o.PrefillPerToken, "decode base": o.DecodeBase, "decode per seq": o.DecodePerSeq} {
		if v < 0 {
			errs = append(errs, fmt.Errorf("%s %s: must not be negative", name, v))
		}
	}
	if err := o.Faults.Validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}
