package client

import (
	"time"

	"github.com/vllm-prober/vllm-prober/config"
	"github.com/vllm-prober/vllm-prober/probe"
	"github.com/vllm-prober/vllm-prober/probe/stream"
)

// Timing selects the definitions a Requester measures with.
type Timing int

const (
	// TimingProbe is the prober's own definitions (docs/design.md,
	// "Measurement (client side)"): TTFT at the first event that carries a
	// generated token, the chat role chunk excluded, and stream_options
	// with continuous usage.
	TimingProbe Timing = iota
	// TimingVLLMBench reproduces vllm bench serve: TTFT at the first event
	// with a non-empty choices list (for chat, vLLM's role chunk counts),
	// one ITL sample per later choice event, latency at the last choice
	// event (a later usage-only chunk does not move it, for chat as for
	// completions), and a stream without any choice event fails. Requests
	// carry vLLM's payload: stream_options {include_usage} only, no
	// temperature, repetition_penalty 1.0 for completions and a single
	// user message as one text content part.
	TimingVLLMBench
)

// vllmMessages renders chat messages as vllm bench serve does: a single
// user message carries its text as a content part; others go as they are.
func vllmMessages(msgs []config.Message) any {
	if len(msgs) != 1 || msgs[0].Role != "user" {
		return msgs
	}
	return []any{map[string]any{"role": "user",
		"content": []any{map[string]string{"type": "text", "text": msgs[0].Content}}}}
}

// errNoChoices is vLLM's reason for failing a stream without any choice.
const errNoChoices = "never received a valid chunk to calculate TTFT"

// vllmCarried applies vllm bench serve's rule to one event: it counts when
// its choices list is not empty.
func (m *measurement) vllmCarried(c *stream.Chunk, _ time.Time) bool {
	return len(c.Choices) > 0
}

// failNoChoices fails a complete stream that had no choice event, as
// vLLM's client does; complete says it ended with [DONE].
func (m *measurement) failNoChoices(res *probe.Result, complete bool) {
	if m.timing == TimingVLLMBench && complete && m.chunks == 0 && res.Disposition == "" {
		res.Disposition, res.Reason, res.Error = probe.ServerFailure, probe.ReasonProtocol, errNoChoices
	}
}
