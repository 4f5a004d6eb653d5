package simulator

import (
	"net/http"
	"strings"
	"time"
)

// collected is the whole output of a non-streaming call.
type collected struct {
	texts    []strings.Builder
	finishes []string
	totals   []int
	timing   seqTiming
	last     time.Time
}

// collect waits for every sequence of c to finish; false when the client
// left or the server closed first.
func (s *Server) collect(r *http.Request, c *call) (*collected, bool) {
	out := &collected{texts: make([]strings.Builder, len(c.seqs)), finishes: make([]string, len(c.seqs)), totals: make([]int, len(c.seqs))}
	for done := 0; done < len(c.seqs); {
		select {
		case <-c.sink.notify:
		case <-r.Context().Done():
			s.eng.abort(c.seqs...)
			return nil, false
		case <-s.done:
			return nil, false
		}
		for _, o := range c.sink.take() {
			out.texts[o.choice].WriteString(o.text)
			out.totals[o.choice] = o.total
			out.last = o.at
			if o.finish != "" {
				out.finishes[o.choice] = o.finish
				out.timing = o.timing
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
	if !s.sleepUntil(r, last.Add(c.plan.extraTTFT)) || !s.applyBodyFault(w, r, c) {
		return
	}
	var m *perRequestMetrics
	if s.o.PerRequestMetrics && len(c.seqs) == 1 {
		m = perRequest(timing, completion)
	}
	u := usageFull{PromptTokens: c.promptTokens(), TotalTokens: c.promptTokens() + completion, CompletionTokens: completion, PromptTokensDetails: jsonNull}
	var body []byte
	if c.chat {
		body = compact(s.chatResponse(c, texts[0].String(), finishes[0], u, m))
	} else {
		choices := make([]cmplChoice, len(c.seqs))
		for i := range choices {
			choices[i] = cmplChoice{Index: i, Text: texts[i].String(), Logprobs: jsonNull, FinishReason: finishes[i], StopReason: jsonNull,
				TokenIDs: jsonNull, PromptLogprobs: jsonNull, PromptTokenIDs: jsonNull}
		}
		body = compact(cmplResponse{ID: c.id, Object: "text_completion", Created: c.created, Model: c.model, Choices: choices,
			ServiceTier: jsonNull, SystemFingerprint: s.fingerprint, Usage: u, KVTransferParams: jsonNull, Metrics: m})
	}
	if c.plan.terminal == faultMalformed {
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
	switch c.plan.terminal {
	case faultStall:
		return s.sleepCtx(r.Context(), c.plan.stall)
	case faultDisconnect:
		abortConnection(w)
		return false
	case faultErrorEvent:
		s.met.success.WithLabelValues("error").Inc()
		c.rc.rec.Status = http.StatusInternalServerError
		writeError(w, internalError())
		return false
	}
	return true
}

func (s *Server) chatResponse(c *call, text, finish string, u usageFull, m *perRequestMetrics) chatResponse {
	msg := chatMessageOut{Role: "assistant", Content: text, Refusal: jsonNull, Annotations: jsonNull, Audio: jsonNull,
		FunctionCall: jsonNull, ToolCalls: []struct{}{}, Reasoning: jsonNull}
	return chatResponse{ID: c.id, Object: "chat.completion", Created: c.created, Model: c.model,
		Choices:     []chatChoice{{Index: 0, Message: msg, Logprobs: jsonNull, FinishReason: finish, StopReason: jsonNull, TokenIDs: jsonNull}},
		ServiceTier: jsonNull, SystemFingerprint: s.fingerprint, Usage: u, PromptLogprobs: jsonNull, PromptTokenIDs: jsonNull,
		PromptText: jsonNull, KVTransferParams: jsonNull, Metrics: m}
}
