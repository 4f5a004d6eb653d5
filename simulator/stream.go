package simulator

import (
	"bytes"
	"fmt"
	"net/http"
	"time"

	"github.com/vllm-prober/vllm-prober/simulator/engine"
	"github.com/vllm-prober/vllm-prober/simulator/fault"
	"github.com/vllm-prober/vllm-prober/simulator/wire"
)

// sse writes events to one streaming response and records their flush times.
type sse struct {
	w   http.ResponseWriter
	rcn *http.ResponseController
	rc  *recorder
	buf bytes.Buffer
	evs []pendingEvent
}

type pendingEvent struct {
	kind   string
	tokens int
}

// add buffers one `data: ...` event; flush writes all buffered events at once.
func (x *sse) add(kind string, tokens int, data []byte) {
	x.buf.WriteString("data: ")
	x.buf.Write(data)
	x.buf.WriteString("\n\n")
	x.evs = append(x.evs, pendingEvent{kind, tokens})
}

func (x *sse) addRaw(kind string, event []byte) {
	x.buf.Write(event)
	x.evs = append(x.evs, pendingEvent{kind, 0})
}

func (x *sse) flush() error {
	_, err := x.w.Write(x.buf.Bytes())
	if err == nil {
		err = x.rcn.Flush()
	}
	at := time.Now()
	x.buf.Reset()
	for _, e := range x.evs {
		x.rc.event(e.kind, e.tokens, at)
	}
	x.evs = x.evs[:0]
	if err != nil {
		return fmt.Errorf("write event: %w", err)
	}
	return nil
}

// expectedEvents is the number of content events the call will stream.
func (c *call) expectedEvents(interval int) int {
	n := 0
	for _, s := range c.seqs {
		n += 1 + (s.Target-1+interval-1)/interval
	}
	return n
}

// stream writes the SSE response of c as outputs arrive from the engine.
func (s *Server) stream(w http.ResponseWriter, r *http.Request, c *call) {
	w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	x := &sse{w: w, rcn: http.NewResponseController(w), rc: c.rc}
	c.rc.rec.Status = http.StatusOK
	if x.rcn.Flush() != nil {
		s.eng.Abort(c.seqs...)
		return
	}
	faultAt := max(c.expectedEvents(s.o.StreamInterval)/2, min(1, c.expectedEvents(s.o.StreamInterval)-1))
	st := &streamState{totals: make([]int, len(c.seqs)), timings: make([]engine.Timing, len(c.seqs))}
	for st.finished < len(c.seqs) {
		select {
		case <-c.sink.Notify():
		case <-r.Context().Done():
			s.eng.Abort(c.seqs...)
			return
		case <-s.done:
			return
		}
		for _, o := range c.sink.Take() {
			delay := c.plan.ExtraTTFT + time.Duration(st.events)*c.plan.ExtraITL
			if !s.sleepUntil(r, o.At.Add(delay)) {
				s.eng.Abort(c.seqs...)
				return
			}
			if st.events == faultAt && !s.midStreamFault(w, r, c, x) {
				s.eng.Abort(c.seqs...)
				return
			}
			s.addOutput(x, c, st, o)
			if x.flush() != nil {
				s.eng.Abort(c.seqs...)
				return
			}
		}
	}
	s.endStream(x, c, st)
}

// streamState tracks a stream's progress across outputs.
type streamState struct {
	events   int // content events written
	finished int
	roleSent bool
	// toolStarted tells that the tool call's first piece (with its id and
	// name) was sent.
	toolStarted bool
	totals      []int
	timings     []engine.Timing
}

// sleepUntil waits for an absolute deadline; false when the client left.
func (s *Server) sleepUntil(r *http.Request, t time.Time) bool {
	return s.sleepCtx(r.Context(), time.Until(t))
}

// midStreamFault applies the call's mid-stream fault before the event
// where it is planned; false means the stream is over.
func (s *Server) midStreamFault(w http.ResponseWriter, r *http.Request, c *call, x *sse) bool {
	switch c.plan.Terminal {
	case fault.KindStall:
		return s.sleepCtx(r.Context(), c.plan.Stall)
	case fault.KindDisconnect:
		abortConnection(w)
		c.rc.rec.Status = 0
		return false
	case fault.KindErrorEvent:
		s.met.RequestFailed()
		x.addRaw("error", wire.StreamErrorEvent(internalError().info))
		x.addRaw("done", []byte("data: [DONE]\n\n"))
		x.flush()
		return false
	case fault.KindMalformed:
		x.addRaw("malformed", fmt.Appendf(nil, `data: {"id":"%s","object":"%s","created":%d,"model":"%s","choices":[{"index":0,`+"\n\n",
			c.id, c.object(), c.created, c.model))
		return x.flush() == nil
	}
	return true
}

// abortConnection drops the connection without the terminating chunk.
func abortConnection(w http.ResponseWriter) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err == nil {
		conn.Close()
		return
	}
	// Connections that cannot be hijacked (HTTP/2) are reset by the server
	// when a handler aborts; this is net/http's documented way to do it.
	panic(http.ErrAbortHandler)
}

// head is the opening keys of the call's responses and chunks.
func (c *call) head(object string) wire.Head {
	return wire.Head{ID: c.id, Object: object, Created: c.created, Model: c.model}
}

// object is the object key of the call's chunks.
func (c *call) object() string {
	if c.chat {
		return "chat.completion.chunk"
	}
	return "text_completion"
}

// addOutput buffers the chunk(s) of one engine output.
func (s *Server) addOutput(x *sse, c *call, st *streamState, o engine.Output) {
	st.totals[o.Choice] = o.Total
	if o.Finish != "" {
		st.finished++
		st.timings[o.Choice] = o.Timing
	}
	final := o.Finish != "" && st.finished == len(c.seqs) && !c.includeUsage
	if c.chat && !st.roleSent {
		st.roleSent = true
		x.add("role", 0, wire.Compact(s.roleChunk(c)))
	}
	kind := "content"
	switch {
	case o.Finish != "":
		kind = "finish"
	case o.Text == "" && o.Reasoning != "":
		kind = "reasoning"
	}
	if c.chat {
		x.add(kind, o.Tokens, wire.Compact(s.chatContentChunk(c, st, o, final)))
	} else {
		x.add(kind, o.Tokens, wire.Compact(s.cmplContentChunk(c, o, final)))
	}
	st.events++
}

// endStream writes the usage chunk (when asked) and [DONE].
func (s *Server) endStream(x *sse, c *call, st *streamState) {
	completion := 0
	for _, n := range st.totals {
		completion += n
	}
	c.rc.rec.CompletionTokens = completion
	if c.includeUsage {
		u := &wire.UsageStream{PromptTokens: c.promptTokens(), TotalTokens: c.promptTokens() + completion, CompletionTokens: completion,
			CompletionTokensDetails: c.completionDetails(completion)}
		var m *wire.PerRequestMetrics
		if s.o.PerRequestMetrics && len(c.seqs) == 1 {
			m = perRequest(st.timings[0], completion)
		}
		if c.chat {
			x.add("usage", 0, wire.Compact(wire.ChatChunk{Head: c.head(c.object()),
				Choices: []wire.ChatChunkChoice{}, Usage: u, SystemFingerprint: s.fingerprint, Metrics: m}))
		} else {
			x.add("usage", 0, wire.Compact(wire.CmplChunk{Head: c.head(c.object()),
				Choices: []wire.CmplChunkChoice{}, Usage: u, SystemFingerprint: s.fingerprint, Metrics: m}))
		}
	}
	if c.plan.Terminal != fault.KindNoDone {
		x.addRaw("done", []byte("data: [DONE]\n\n"))
	}
	x.flush()
}
