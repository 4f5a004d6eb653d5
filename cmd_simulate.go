package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"

	"github.com/alecthomas/kingpin/v2"

	"github.com/vllm-prober/vllm-prober/simulator"
)

// simulateCommand registers `simulate`: the vLLM simulator on its own.
func simulateCommand(app *kingpin.Application) action {
	cmd := app.Command("simulate", "Run the vLLM simulator alone (OpenAI-compatible API, /metrics and fault injection).")
	d := simulator.DefaultOptions()
	o := d
	var listen string
	cmd.Flag("web.listen-address", "Address to listen on.").Default("127.0.0.1:8000").StringVar(&listen)
	cmd.Flag("model", "Served model name.").Default(d.Model).StringVar(&o.Model)
	cmd.Flag("max-model-len", "Maximum prompt plus output tokens of one sequence.").Default(strconv.Itoa(d.MaxModelLen)).IntVar(&o.MaxModelLen)
	cmd.Flag("seed", "Seed of ids, generated text, jitter and fault draws.").Default("0").Int64Var(&o.Seed)
	cmd.Flag("max-num-seqs", "Maximum number of sequences in the running batch; more requests queue.").Default(strconv.Itoa(d.MaxNumSeqs)).IntVar(&o.MaxNumSeqs)
	cmd.Flag("stream-interval", "Tokens per streamed event.").Default("1").IntVar(&o.StreamInterval)
	cmd.Flag("kv-cache-tokens", "KV cache capacity in tokens; the batch is preempted beyond it.").Default(strconv.Itoa(d.KVCacheTokens)).IntVar(&o.KVCacheTokens)
	cmd.Flag("api-key", "Require this Bearer token on /v1 paths (also read from VLLM_API_KEY).").Envar("VLLM_API_KEY").StringVar(&o.APIKey)
	cmd.Flag("served-version", "Version reported by /version and system_fingerprint.").Default(d.Version).StringVar(&o.Version)
	cmd.Flag("prefill-base", "Fixed cost of an engine step that prefills.").Default(d.PrefillBase.String()).DurationVar(&o.PrefillBase)
	cmd.Flag("prefill-per-token", "Prefill cost per uncached prompt token.").Default(d.PrefillPerToken.String()).DurationVar(&o.PrefillPerToken)
	cmd.Flag("decode-base", "Fixed cost of an engine step that decodes.").Default(d.DecodeBase.String()).DurationVar(&o.DecodeBase)
	cmd.Flag("decode-per-seq", "Decode cost per sequence in the batch.").Default(d.DecodePerSeq.String()).DurationVar(&o.DecodePerSeq)
	cmd.Flag("jitter", "Relative jitter of step durations, in [0, 1).").Default("0.05").Float64Var(&o.Jitter)
	cmd.Flag("reasoning-tokens", "Reasoning tokens every chat answer starts with, streamed as delta.reasoning (a reasoning parser's output); 0 for none.").Default("0").IntVar(&o.ReasoningTokens)
	cmd.Flag("embedding-dim", "Length of the vectors of POST /v1/embeddings.").Default(strconv.Itoa(d.EmbeddingDim)).IntVar(&o.EmbeddingDim)
	cmd.Flag("enable-per-request-metrics", "Attach the per-request `metrics` object (vLLM's --enable-per-request-metrics).").Default("true").BoolVar(&o.PerRequestMetrics)
	cmd.Flag("enable-prefix-caching", "Reuse KV of identical 16-token prompt blocks.").Default("true").BoolVar(&o.PrefixCaching)
	cmd.Flag("enable-request-id-headers", "Echo X-Request-Id on responses.").BoolVar(&o.EnableRequestIDHeaders)
	cmd.Flag("timeout-keep-alive", "Close a keep-alive connection idle this long, as vLLM's server does (VLLM_HTTP_TIMEOUT_KEEP_ALIVE); 0 keeps it open.").Default(d.KeepAlive.String()).DurationVar(&o.KeepAlive)
	cmd.Flag("trace", "Record per-request event write times, served on GET /sim/trace.").BoolVar(&o.Trace)
	cmd.Flag("trace-limit", "Trace records kept.").Default(strconv.Itoa(d.TraceLimit)).IntVar(&o.TraceLimit)
	faultFlags(cmd, &o.Faults)
	return func(ctx context.Context, logger *slog.Logger) int {
		if err := checkSimulateFlags(o); err != nil {
			logger.Error("invalid simulator flags", "err", err)
			return 1
		}
		o.Logger = logger
		sim, err := simulator.New(o)
		if err != nil {
			logger.Error("invalid simulator flags", "err", err)
			return 1
		}
		url, err := sim.Start(listen)
		if err != nil {
			sim.Close()
			logger.Error("cannot start simulator", "err", err)
			return 1
		}
		logger.Info("simulator ready", "url", url, "model", o.Model, "max_num_seqs", o.MaxNumSeqs)
		<-ctx.Done()
		logger.Info("simulator stopping")
		if err := sim.Close(); err != nil {
			logger.Error("simulator close", "err", err)
			return 1
		}
		return 0
	}
}

// checkSimulateFlags refuses the flag values simulator.Options would take
// as "use the default" (a zero or negative count, an empty model name), so
// that a 0 on the command line is not silently replaced.
func checkSimulateFlags(o simulator.Options) error {
	for _, f := range []struct {
		name string
		v    int
	}{
		{"stream-interval", o.StreamInterval},
		{"embedding-dim", o.EmbeddingDim},
		{"kv-cache-tokens", o.KVCacheTokens},
		{"trace-limit", o.TraceLimit},
	} {
		if f.v < 1 {
			return fmt.Errorf("--%s=%d: must be at least 1", f.name, f.v)
		}
	}
	if o.Model == "" {
		return errors.New("--model: must not be empty")
	}
	if o.Version == "" {
		return errors.New("--served-version: must not be empty")
	}
	return nil
}

// faultFlags registers one rate flag per fault kind and the extra latencies.
func faultFlags(cmd *kingpin.CmdClause, f *simulator.Faults) {
	rates := []struct {
		name, help string
		dst        *float64
	}{
		{"fault.http-500", "Rate of HTTP 500 answers before streaming.", &f.HTTP500},
		{"fault.http-503", "Rate of HTTP 503 answers before streaming.", &f.HTTP503},
		{"fault.http-429", "Rate of HTTP 429 answers before streaming.", &f.HTTP429},
		{"fault.slow-headers", "Rate of responses whose headers are delayed.", &f.SlowHeaders},
		{"fault.stall", "Rate of streams that stall mid-stream.", &f.Stall},
		{"fault.disconnect", "Rate of streams whose connection drops mid-stream.", &f.Disconnect},
		{"fault.error-event", "Rate of streams with an in-stream error event.", &f.ErrorEvent},
		{"fault.malformed-event", "Rate of streams with a malformed event.", &f.MalformedEvent},
		{"fault.no-done", "Rate of streams without data: [DONE].", &f.NoDone},
		{"fault.wrong-model", "Rate of responses naming the wrong model.", &f.WrongModel},
		{"fault.bad-answer", "Rate of wrong answers to questions.", &f.BadAnswer},
		{"fault.bad-tool-call", "Rate of forced tool calls whose arguments are not valid JSON.", &f.BadToolCall},
	}
	for _, r := range rates {
		cmd.Flag(r.name, r.help).Default("0").Float64Var(r.dst)
	}
	cmd.Flag("fault.slow-headers-delay", "Delay of slowed headers.").Default(simulator.DefaultSlowHeadersDelay.String()).DurationVar(&f.SlowHeadersDelay)
	cmd.Flag("fault.stall-duration", "Length of a mid-stream stall.").Default(simulator.DefaultStallDuration.String()).DurationVar(&f.StallDuration)
	cmd.Flag("fault.extra-ttft", "Extra delay before the first event of every request.").Default("0s").DurationVar(&f.ExtraTTFT)
	cmd.Flag("fault.extra-itl", "Extra delay added to every gap between events.").Default("0s").DurationVar(&f.ExtraITL)
}
