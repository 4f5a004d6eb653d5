package probe

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"
)

// chunk is the part of a streamed completions or chat chunk the prober
// reads. Unknown fields are ignored and nulls leave the zero value, so the
// several vLLM versions' shapes all decode.
type chunk struct {
	Model   string          `json:"model"`
	Choices []chunkChoice   `json:"choices"`
	Usage   *chunkUsage     `json:"usage"`
	Metrics *chunkMetrics   `json:"metrics"`
	Error   json.RawMessage `json:"error"`

	// Storage of the fast decoder (decodeFast), kept across events.
	lastModel string     // the model name of the previous event
	usageBuf  chunkUsage // what Usage points to after decodeFast
}

type chunkChoice struct {
	Text         string     `json:"text"`
	Delta        chunkDelta `json:"delta"`
	FinishReason *string    `json:"finish_reason"`
}

type chunkDelta struct {
	Content   string `json:"content"`
	Reasoning string `json:"reasoning"`
	// ToolCalls carries generated tool-call deltas when a tool parser is
	// active; vLLM also sends an empty list on plain content deltas.
	ToolCalls json.RawMessage `json:"tool_calls"`
}

// hasToolCall reports a non-empty tool_calls delta.
func (d *chunkDelta) hasToolCall() bool {
	t := bytes.TrimSpace(d.ToolCalls)
	return len(t) > 0 && !bytes.Equal(t, []byte("null")) && !bytes.Equal(t, []byte("[]"))
}

type chunkUsage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
}

// chunkMetrics is vLLM's per-request timing object (milliseconds).
type chunkMetrics struct {
	QueueTimeMS *float64 `json:"queue_time_ms"`
	TTFTMS      *float64 `json:"time_to_first_token_ms"`
}

// apiError is the body of vLLM's error responses and in-stream error
// events: {"error": {"message", "type", "param", "code"}}, or, from the
// auth middleware, {"error": "Unauthorized"}.
type apiError struct {
	Message string `json:"message"`
	Type    string `json:"type"`
	Code    any    `json:"code"`
}

// decode parses one event's data into c, reusing c's storage.
func (c *chunk) decode(data []byte) error {
	// encoding/json decodes into the reused elements in place, so stale
	// fields of an earlier event must be cleared first.
	reset := func() {
		choices := c.Choices[:cap(c.Choices)]
		clear(choices)
		*c = chunk{Choices: choices[:0], lastModel: c.lastModel}
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

// hasError reports whether the chunk is an error event.
func (c *chunk) hasError() bool {
	return len(c.Error) > 0 && !bytes.Equal(c.Error, []byte("null"))
}

// errorMessage renders an "error" member as a short message.
func errorMessage(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return truncate(s, maxErrorLen)
	}
	var e apiError
	if json.Unmarshal(raw, &e) != nil || (e.Message == "" && e.Type == "") {
		return truncate(string(raw), maxErrorLen)
	}
	if e.Type == "" {
		return truncate(e.Message, maxErrorLen)
	}
	return truncate(e.Type+": "+e.Message, maxErrorLen)
}

// bodyErrorMessage extracts the message of a non-200 response body, falling
// back to its first bytes.
func bodyErrorMessage(body []byte) string {
	var b struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
	}
	if json.Unmarshal(body, &b) == nil {
		if len(b.Error) > 0 && !bytes.Equal(b.Error, []byte("null")) {
			return errorMessage(b.Error)
		}
		if b.Message != "" {
			return truncate(b.Message, maxErrorLen)
		}
	}
	return truncate(string(bytes.TrimSpace(body)), maxErrorLen)
}

// serverTiming converts the metrics object, or returns nil when it carries
// neither time.
func (m *chunkMetrics) serverTiming() *ServerTiming {
	if m == nil || (m.QueueTimeMS == nil && m.TTFTMS == nil) {
		return nil
	}
	st := &ServerTiming{}
	if m.QueueTimeMS != nil {
		st.QueueTime = msDuration(*m.QueueTimeMS)
	}
	if m.TTFTMS != nil {
		st.TTFT = msDuration(*m.TTFTMS)
	}
	return st
}

func msDuration(ms float64) time.Duration {
	const maxMS = float64(1<<62) / float64(time.Millisecond)
	if ms < 0 || ms != ms {
		return 0
	}
	if ms > maxMS {
		ms = maxMS
	}
	return time.Duration(ms * float64(time.Millisecond))
}

// maxErrorLen bounds Result.Error.
const maxErrorLen = 256

// truncate shortens s to at most n bytes without splitting a UTF-8
// sequence, marking the cut.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := n
	for i > 0 && s[i]&0xC0 == 0x80 {
		i--
	}
	return s[:i] + "..."
}
