// Package simtest runs the project's vLLM simulator for tests: one way to
// start it, so every test gets a loopback server that stops when the test
// ends.
//
// Behaviours of the simulator a test may want, and how to get them:
//
//   - reasoning deltas: Start(t, o, Reasoning(n)); every chat answer then
//     streams n `delta.reasoning` tokens first and its usage carries
//     completion_tokens_details.reasoning_tokens.
//   - tool calls: no option; a chat request with `tools` and `tool_choice`
//     "required" or {"type":"function","function":{"name":...}} is
//     answered with a call of that function. Faults(simulator.Faults{
//     BadToolCall: r}) makes the arguments invalid JSON at rate r.
//   - embeddings: POST /v1/embeddings is always served; EmbeddingDim(d)
//     sets the vector length (default simulator.DefaultEmbeddingDim).
//   - output drift: sim.SetFaults with OutputVariant set (or POST
//     /sim/faults {"output_variant": k}) changes every answer's text for
//     the requests that follow; 0 is the original text.
//   - prefix caching is on by default (Options.PrefixCaching).
package simtest

import (
	"testing"

	"github.com/vllm-prober/vllm-prober/simulator"
)

// Start serves a simulator with o, changed by each non-nil edit in turn,
// on a free loopback port until the test ends, and returns it with its
// base URL. The edits of this package (Reasoning, EmbeddingDim, Faults)
// and plain functions of the caller mix freely.
func Start(t testing.TB, o simulator.Options, edit ...func(*simulator.Options)) (*simulator.Server, string) {
	t.Helper()
	for _, e := range edit {
		if e != nil {
			e(&o)
		}
	}
	sim, url, err := simulator.Serve(o, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sim.Close() })
	return sim, url
}

// Reasoning is an edit for Start: every chat answer starts with n
// reasoning tokens (the simulator's --reasoning-tokens).
func Reasoning(n int) func(*simulator.Options) {
	return func(o *simulator.Options) { o.ReasoningTokens = n }
}

// EmbeddingDim is an edit for Start: POST /v1/embeddings returns vectors
// of d values (the simulator's --embedding-dim).
func EmbeddingDim(d int) func(*simulator.Options) {
	return func(o *simulator.Options) { o.EmbeddingDim = d }
}

// Faults is an edit for Start: the simulator starts with the fault set f
// (rates, bad_tool_call, output_variant, extra latencies); Server.SetFaults
// changes it later.
func Faults(f simulator.Faults) func(*simulator.Options) {
	return func(o *simulator.Options) { o.Faults = f }
}
