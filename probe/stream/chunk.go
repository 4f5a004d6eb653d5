package stream

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// Chunk is the part of a streamed completions or chat chunk the prober
// reads. Unknown fields are ignored and nulls leave the zero value, so the
// several vLLM versions' shapes all decode.
type Chunk struct {
	Model   string          `json:"model"`
	Choices []Choice        `json:"choices"`
	Usage   *Usage          `json:"usage"`
	Metrics *Metrics        `json:"metrics"`
	Error   json.RawMessage `json:"error"`

	// Storage of the fast decoder (decodeFast), kept across events.
	lastModel string // the model name of the previous event
	usageBuf  Usage  // what Usage points to after decodeFast
	reasonBuf int    // what usageBuf's ReasoningTokens points to
}

// Choice is one choice of a chunk: completions fill Text, chat fills Delta.
type Choice struct {
	Text         string  `json:"text"`
	Delta        Delta   `json:"delta"`
	FinishReason *string `json:"finish_reason"`
}

// Delta is the generated part of a chat choice.
type Delta struct {
	Content   string `json:"content"`
	Reasoning string `json:"reasoning"`
	// ReasoningContent is the name vLLM gave reasoning before `reasoning`
	// (and other servers still give it); ReasoningText reads either.
	ReasoningContent string `json:"reasoning_content"`
	// ToolCalls carries generated tool-call deltas when a tool parser is
	// active; vLLM also sends an empty list on plain content deltas.
	ToolCalls json.RawMessage `json:"tool_calls"`
}

// ReasoningText returns the reasoning the delta carries: `reasoning`, or
// the older `reasoning_content` when only that is set (servers that sent
// both during the rename sent the same text in each).
func (d *Delta) ReasoningText() string {
	if d.Reasoning != "" {
		return d.Reasoning
	}
	return d.ReasoningContent
}

// HasToolCall reports a non-empty tool_calls delta.
func (d *Delta) HasToolCall() bool {
	t := bytes.TrimSpace(d.ToolCalls)
	return len(t) > 0 && !bytes.Equal(t, []byte("null")) && !bytes.Equal(t, []byte("[]"))
}

// ToolCallDelta is one streamed fragment of a tool call (vLLM's
// DeltaToolCall): the first fragment of a call carries its id and
// function name, later ones more of its arguments.
type ToolCallDelta struct {
	Index    int              `json:"index"`
	ID       string           `json:"id"`
	Function ToolCallFunction `json:"function"`
}

// ToolCallFunction is the function part of a ToolCallDelta.
type ToolCallFunction struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// ToolCallDeltas decodes the delta's tool_calls list; a value that is not
// a list of tool-call objects is an error (a malformed event).
func (d *Delta) ToolCallDeltas() ([]ToolCallDelta, error) {
	if !d.HasToolCall() {
		return nil, nil
	}
	var out []ToolCallDelta
	if err := json.Unmarshal(d.ToolCalls, &out); err != nil {
		return nil, fmt.Errorf("malformed tool_calls: %w", err)
	}
	return out, nil
}

// Usage is the token counts the server reports in a usage chunk.
type Usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	// CompletionTokensDetails is newer vLLM's split of completion_tokens.
	CompletionTokensDetails TokensDetails `json:"completion_tokens_details"`
}

// TokensDetails is usage.completion_tokens_details; ReasoningTokens is nil
// when the server did not report it.
type TokensDetails struct {
	ReasoningTokens *int `json:"reasoning_tokens"`
}

// Metrics is vLLM's per-request timing object (milliseconds).
type Metrics struct {
	QueueTimeMS *float64 `json:"queue_time_ms"`
	TTFTMS      *float64 `json:"time_to_first_token_ms"`
}

// Decode parses one event's data into c, reusing c's storage.
func (c *Chunk) Decode(data []byte) error {
	// encoding/json decodes into the reused elements in place, so stale
	// fields of an earlier event must be cleared first.
	reset := func() {
		choices := c.Choices[:cap(c.Choices)]
		clear(choices)
		*c = Chunk{Choices: choices[:0], lastModel: c.lastModel}
	}
	reset()
	if c.decodeFast(data) {
		return nil
	}
	reset()
	if err := json.Unmarshal(data, c); err != nil {
		return fmt.Errorf("malformed event: %w", err)
	}
	return nil
}

// HasError reports whether the chunk is an error event.
func (c *Chunk) HasError() bool {
	return len(c.Error) > 0 && !bytes.Equal(c.Error, []byte("null"))
}
