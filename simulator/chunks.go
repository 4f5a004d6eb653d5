package simulator

import "time"

// roleChunk is the chat stream's first chunk, sent with the first output.
func (s *Server) roleChunk(c *call) chatChunk {
	ch := chatChunk{ID: c.id, Object: c.object(), Created: c.created, Model: c.model,
		Choices:        []chatChunkChoice{{Index: 0, Delta: chatDelta{Role: "assistant", Content: strPtr("")}, Logprobs: jsonNull}},
		PromptTokenIDs: jsonNull, PromptText: jsonNull}
	if c.continuous {
		p := c.promptTokens()
		ch.Usage = &usageStream{PromptTokens: p, TotalTokens: p}
	}
	return ch
}

func (c *call) runningUsage(o output) *usageStream {
	if !c.continuous {
		return nil
	}
	p := len(c.seqs[o.choice].promptIDs)
	return &usageStream{PromptTokens: p, TotalTokens: p + o.total, CompletionTokens: o.total}
}

// chatContentChunk is a content chunk, or the finish chunk when o finishes.
func (s *Server) chatContentChunk(c *call, o output, final bool) chatChunk {
	choice := chatChunkChoice{Index: o.choice, Delta: chatDelta{Content: strPtr(o.text)}, Logprobs: jsonNull, TokenIDs: jsonNull}
	if o.finish != "" {
		choice.FinishReason = strPtr(o.finish)
		choice.StopReason = jsonNull
	}
	ch := chatChunk{ID: c.id, Object: c.object(), Created: c.created, Model: c.model,
		Choices: []chatChunkChoice{choice}, Usage: c.runningUsage(o)}
	if final {
		ch.SystemFingerprint = s.fingerprint
	}
	return ch
}

// cmplContentChunk is a completions chunk; every choice key is present.
func (s *Server) cmplContentChunk(c *call, o output, final bool) cmplChunk {
	choice := cmplChunkChoice{Index: o.choice, Text: o.text, Logprobs: jsonNull, StopReason: jsonNull,
		PromptTokenIDs: jsonNull, TokenIDs: jsonNull}
	if o.finish != "" {
		choice.FinishReason = strPtr(o.finish)
	}
	ch := cmplChunk{ID: c.id, Object: c.object(), Created: c.created, Model: c.model,
		Choices: []cmplChunkChoice{choice}, Usage: c.runningUsage(o)}
	if final {
		ch.SystemFingerprint = s.fingerprint
	}
	return ch
}

// perRequest builds vLLM's per-request timing metrics from engine times.
func perRequest(t seqTiming, completion int) *perRequestMetrics {
	ms := func(d time.Duration) *float64 {
		v := float64(d) / float64(time.Millisecond)
		return &v
	}
	m := &perRequestMetrics{
		TimeToFirstTokenMs: ms(t.firstToken.Sub(t.scheduled)),
		QueueTimeMs:        ms(t.scheduled.Sub(t.queued)),
		GenerationTimeMs:   ms(t.lastToken.Sub(t.firstToken)),
	}
	if completion > 1 {
		m.MeanITLMs = ms(t.lastToken.Sub(t.firstToken) / time.Duration(completion-1))
	}
	if d := t.lastToken.Sub(t.scheduled); d > 0 {
		v := float64(completion) / d.Seconds()
		m.TokensPerSecond = &v
	}
	return m
}
