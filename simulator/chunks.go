package simulator

import (
	"time"

	"github.com/vllm-prober/vllm-prober/simulator/engine"
	"github.com/vllm-prober/vllm-prober/simulator/wire"
)

// roleChunk is the chat stream's first chunk, sent with the first output.
func (s *Server) roleChunk(c *call) wire.ChatChunk {
	ch := wire.ChatChunk{Head: c.head(c.object()),
		Choices:        []wire.ChatChunkChoice{{Index: 0, Delta: wire.ChatDelta{Role: "assistant", Content: strPtr("")}, Logprobs: wire.Null}},
		PromptTokenIDs: wire.Null, PromptText: wire.Null}
	if c.continuous {
		p := c.promptTokens()
		ch.Usage = &wire.UsageStream{PromptTokens: p, TotalTokens: p}
	}
	return ch
}

func (c *call) runningUsage(o engine.Output) *wire.UsageStream {
	if !c.continuous {
		return nil
	}
	p := len(c.seqs[o.Choice].PromptIDs)
	return &wire.UsageStream{PromptTokens: p, TotalTokens: p + o.Total, CompletionTokens: o.Total}
}

// chatContentChunk is a content chunk, or the finish chunk when o finishes.
func (s *Server) chatContentChunk(c *call, st *streamState, o engine.Output, final bool) wire.ChatChunk {
	choice := wire.ChatChunkChoice{Index: o.Choice, Delta: c.delta(st, o), Logprobs: wire.Null, TokenIDs: wire.Null}
	if o.Finish != "" {
		choice.FinishReason = strPtr(c.finishReason(o.Finish))
		choice.StopReason = wire.Null
	}
	ch := wire.ChatChunk{Head: c.head(c.object()),
		Choices: []wire.ChatChunkChoice{choice}, Usage: c.runningUsage(o)}
	if final {
		ch.SystemFingerprint = s.fingerprint
	}
	return ch
}

// delta is the delta of one output: its reasoning text, then its answer
// text as content or as a piece of the tool call's arguments. The first
// piece of a tool call carries its id, type and function name; an output
// without text (an EOS) is an empty content, or {} for a tool call.
func (c *call) delta(st *streamState, o engine.Output) wire.ChatDelta {
	var d wire.ChatDelta
	if o.Reasoning != "" {
		d.Reasoning = strPtr(o.Reasoning)
	}
	switch {
	case c.tool == nil:
		if o.Text != "" || o.Reasoning == "" {
			d.Content = strPtr(o.Text)
		}
	case o.Text != "":
		tc := wire.DeltaToolCall{Index: 0, Function: wire.DeltaFunction{Arguments: o.Text}}
		if !st.toolStarted {
			st.toolStarted = true
			tc.ID, tc.Type, tc.Function.Name = c.tool.ID, "function", c.tool.Name
		}
		d.ToolCalls = []wire.DeltaToolCall{tc}
	}
	return d
}

// cmplContentChunk is a completions chunk; every choice key is present.
func (s *Server) cmplContentChunk(c *call, o engine.Output, final bool) wire.CmplChunk {
	choice := wire.CmplChunkChoice{Index: o.Choice, Text: o.Text, Logprobs: wire.Null, StopReason: wire.Null,
		PromptTokenIDs: wire.Null, TokenIDs: wire.Null}
	if o.Finish != "" {
		choice.FinishReason = strPtr(o.Finish)
	}
	ch := wire.CmplChunk{Head: c.head(c.object()),
		Choices: []wire.CmplChunkChoice{choice}, Usage: c.runningUsage(o)}
	if final {
		ch.SystemFingerprint = s.fingerprint
	}
	return ch
}

// perRequest builds vLLM's per-request timing metrics from engine times.
func perRequest(t engine.Timing, completion int) *wire.PerRequestMetrics {
	ms := func(d time.Duration) *float64 {
		v := float64(d) / float64(time.Millisecond)
		return &v
	}
	m := &wire.PerRequestMetrics{
		TimeToFirstTokenMs: ms(t.FirstToken.Sub(t.Scheduled)),
		QueueTimeMs:        ms(t.Scheduled.Sub(t.Queued)),
		GenerationTimeMs:   ms(t.LastToken.Sub(t.FirstToken)),
	}
	if completion > 1 {
		m.MeanITLMs = ms(t.LastToken.Sub(t.FirstToken) / time.Duration(completion-1))
	}
	if d := t.LastToken.Sub(t.Scheduled); d > 0 {
		v := float64(completion) / d.Seconds()
		m.TokensPerSecond = &v
	}
	return m
}

// strPtr returns a pointer to s, for optional string fields.
func strPtr(s string) *string { return &s }
