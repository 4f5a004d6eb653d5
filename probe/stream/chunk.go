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
	// ToolCalls carries generated tool-call deltas when a tool parser is
	// active; vLLM also sends an empty list on plain content deltas.
	ToolCalls json.RawMessage `json:"tool_calls"`
}

// HasToolCall reports a non-empty tool_calls delta.
func (d *Delta) HasToolCall() bool {
	t := bytes.TrimSpace(d.ToolCalls)
	return len(t) > 0 && !bytes.Equal(t, []byte("null")) && !bytes.Equal(t, []byte("[]"))
}

// Usage is the token counts the server reports in a usage chunk.
type Usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
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
