package client

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/vllm-prober/vllm-prober/probe"
	"github.com/vllm-prober/vllm-prober/probe/stream"
)

// maxToolCalls bounds the calls one response may make, so a server that
// streams endless new indexes cannot grow the measurement without limit.
const maxToolCalls = 64

// answer tells the answer of a response from its reasoning
// (docs/design.md, "Reasoning and tool calls"): the answer text, the
// first answer-carrying event, the reasoning events and text, the
// server's reasoning token count and the tool calls assembled by index.
type answer struct {
	at              time.Time // the first answer-carrying event
	text, reasoning strings.Builder
	reasoningEvents int
	serverReasoning *int // usage.completion_tokens_details.reasoning_tokens, copied
	calls           map[int]*probe.ToolCall
}

// observe applies one event's choices and usage; it fails on tool_calls
// that are not a list of tool-call fragments.
func (a *answer) observe(c *stream.Chunk, at time.Time) error {
	reasoned, answered := false, false
	for i := range c.Choices {
		ch := &c.Choices[i]
		if r := ch.Delta.ReasoningText(); r != "" {
			reasoned = true
			a.reasoning.WriteString(r)
		}
		if ch.Text != "" || ch.Delta.Content != "" {
			answered = true
			a.text.WriteString(ch.Text)
			a.text.WriteString(ch.Delta.Content)
		}
		deltas, err := ch.Delta.ToolCallDeltas()
		if err != nil {
			return err
		}
		if len(deltas) > 0 {
			answered = true
		}
		if err := a.addToolCalls(deltas); err != nil {
			return err
		}
	}
	if reasoned {
		a.reasoningEvents++
	}
	if answered && a.at.IsZero() {
		a.at = at
	}
	if c.Usage != nil {
		if n := c.Usage.CompletionTokensDetails.ReasoningTokens; n != nil {
			v := *n // the chunk's storage is reused by the next event
			a.serverReasoning = &v
		}
	}
	return nil
}

// addToolCalls assembles fragments per index: id and name from the first
// fragment that has them, arguments concatenated in arrival order.
func (a *answer) addToolCalls(deltas []stream.ToolCallDelta) error {
	for _, d := range deltas {
		tc, ok := a.calls[d.Index]
		if !ok {
			if len(a.calls) >= maxToolCalls {
				return fmt.Errorf("more than %d tool calls in one response", maxToolCalls)
			}
			if a.calls == nil {
				a.calls = map[int]*probe.ToolCall{}
			}
			tc = &probe.ToolCall{}
			a.calls[d.Index] = tc
		}
		if tc.ID == "" {
			tc.ID = d.ID
		}
		if tc.Name == "" {
			tc.Name = d.Function.Name
		}
		tc.Arguments += d.Function.Arguments
	}
	return nil
}

// generatedText returns the text one event generated, reasoning first,
// as the output fingerprint hashes it.
func generatedText(c *stream.Chunk) string {
	var sb strings.Builder
	for i := range c.Choices {
		ch := &c.Choices[i]
		sb.WriteString(ch.Delta.ReasoningText())
		sb.WriteString(ch.Text)
		sb.WriteString(ch.Delta.Content)
		// observe has decoded these already and failed the event if they
		// were malformed; the id is left out: servers draw it per request.
		deltas, _ := ch.Delta.ToolCallDeltas()
		for _, d := range deltas {
			sb.WriteString(d.Function.Name)
			sb.WriteString(d.Function.Arguments)
		}
	}
	return sb.String()
}

// fill writes the answer's part of the measurement into res.
func (a *answer) fill(res *probe.Result, start time.Time) {
	if !a.at.IsZero() {
		res.TTFA = a.at.Sub(start)
	}
	res.Text = a.text.String()
	res.Reasoning = a.reasoning.String()
	res.ReasoningEvents = a.reasoningEvents
	res.ReasoningTokens = a.reasoningEvents
	if a.serverReasoning != nil {
		res.ReasoningTokens = *a.serverReasoning
	}
	idx := make([]int, 0, len(a.calls))
	for i := range a.calls {
		idx = append(idx, i)
	}
	sort.Ints(idx)
	for _, i := range idx {
		res.ToolCalls = append(res.ToolCalls, *a.calls[i])
	}
}
