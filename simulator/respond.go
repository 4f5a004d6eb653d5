package simulator

import (
	"net/http"
	"strings"
	"time"

	"github.com/vllm-prober/vllm-prober/simulator/engine"
	"github.com/vllm-prober/vllm-prober/simulator/fault"
	"github.com/vllm-prober/vllm-prober/simulator/wire"
)

// collected is the whole output of a non-streaming call.
type collected struct {
	texts    []strings.Builder
	reasons  []strings.Builder // reasoning texts
	finishes []string
	totals   []int
	timing   engine.Timing
	last     time.Time
}

// collect waits for every sequence of c to finish; false when the client
// left or the server closed first.
func (s *Server) collect(r *http.Request, c *call) (*collected, bool) {
	n := len(c.seqs)
	out := &collected{texts: make([]strings.Builder, n), reasons: make([]strings.Builder, n), finishes: make([]string, n), totals: make([]int, n)}
	for done := 0; done < len(c.seqs); {
		select {
		case <-c.sink.Notify():
		case <-r.Context().Done():
			s.eng.Abort(c.seqs...)
			return nil, false
		case <-s.done:
			return nil, false
		}
		for _, o := range c.sink.Take() {
			out.texts[o.Choice].WriteString(o.Text)
			out.reasons[o.Choice].WriteString(o.Reasoning)
			out.totals[o.Choice] = o.Total
			out.last = o.At
			if o.Finish != "" {
				out.finishes[o.Choice] = o.Finish
				out.timing = o.Timing
				done++
			}
		}
	}
	return out, true
}

// respond waits for every sequence of c and writes one JSON response.
func (s *Server) respond(w http.ResponseWriter, r *http.Request, c *call) {
	col, ok := s.collect(r, c)
	if !ok {
		return
	}
	texts, finishes, totals, timing, last := col.texts, col.finishes, col.totals, col.timing, col.last
	completion := 0
	for _, n := range totals {
		completion += n
	}
	c.rc.rec.CompletionTokens = completion
	if !s.sleepUntil(r, last.Add(c.plan.ExtraTTFT)) || !s.applyBodyFault(w, r, c) {
		return
	}
	var m *wire.PerRequestMetrics
	if s.o.PerRequestMetrics && len(c.seqs) == 1 {
		m = perRequest(timing, completion)
	}
	u := wire.UsageFull{PromptTokens: c.promptTokens(), TotalTokens: c.promptTokens() + completion, CompletionTokens: completion, PromptTokensDetails: wire.Null,
		CompletionTokensDetails: c.completionDetails(completion)}
	var body []byte
	if c.chat {
		body = wire.Compact(s.chatResponse(c, col, u, m))
	} else {
		choices := make([]wire.CmplChoice, len(c.seqs))
		for i := range choices {
			choices[i] = wire.CmplChoice{Index: i, Text: texts[i].String(), Logprobs: wire.Null, FinishReason: finishes[i], StopReason: wire.Null,
				TokenIDs: wire.Null, PromptLogprobs: wire.Null, PromptTokenIDs: wire.Null}
		}
		body = wire.Compact(wire.CmplResponse{Head: c.head("text_completion"), Choices: choices,
			ServiceTier: wire.Null, SystemFingerprint: s.fingerprint, Usage: u, KVTransferParams: wire.Null, Metrics: m})
	}
	if c.plan.Terminal == fault.KindMalformed {
		body = body[:len(body)/2]
	}
	c.rc.rec.Status = http.StatusOK
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	w.Write(body)
	c.rc.event("body", completion, time.Now())
}

// applyBodyFault applies the faults that break a non-streaming response;
// false means the response is over.
func (s *Server) applyBodyFault(w http.ResponseWriter, r *http.Request, c *call) bool {
	switch c.plan.Terminal {
	case fault.KindStall:
		return s.sleepCtx(r.Context(), c.plan.Stall)
	case fault.KindDisconnect:
		abortConnection(w)
		return false
	case fault.KindErrorEvent:
		s.met.RequestFailed()
		c.rc.rec.Status = http.StatusInternalServerError
		writeError(w, internalError())
		return false
	}
	return true
}

// chatResponse is the non-streaming chat response: the message holds the
// reasoning text (null without reasoning) and either the answer text or
// the tool call, whose arguments are the answer text.
func (s *Server) chatResponse(c *call, col *collected, u wire.UsageFull, m *wire.PerRequestMetrics) wire.ChatResponse {
	msg := wire.ChatMessageOut{Role: "assistant", Content: col.texts[0].String(), Refusal: wire.Null, Annotations: wire.Null, Audio: wire.Null,
		FunctionCall: wire.Null, ToolCalls: []wire.ToolCall{}}
	if r := col.reasons[0].String(); r != "" {
		msg.Reasoning = &r
	}
	if c.tool != nil && msg.Content != "" {
		msg.ToolCalls = []wire.ToolCall{{ID: c.tool.ID, Type: "function", Function: wire.FunctionCall{Name: c.tool.Name, Arguments: msg.Content}}}
		msg.Content = ""
	}
	return wire.ChatResponse{Head: c.head("chat.completion"),
		Choices: []wire.ChatChoice{{Index: 0, Message: msg, Logprobs: wire.Null, FinishReason: c.finishReason(col.finishes[0]),
			StopReason: wire.Null, TokenIDs: wire.Null}},
		ServiceTier: wire.Null, SystemFingerprint: s.fingerprint, Usage: u, PromptLogprobs: wire.Null, PromptTokenIDs: wire.Null,
		PromptText: wire.Null, KVTransferParams: wire.Null, Metrics: m}
}
