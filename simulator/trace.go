package simulator

import (
	"net/http"
	"sync"
	"time"
)

// TraceRecord is the ground truth of one generation request: when it
// arrived and when each event was written (taken right after the flush).
type TraceRecord struct {
	// RequestID is the X-Request-Id header of the request ("" when absent).
	RequestID string `json:"request_id"`
	// ID is the response id (cmpl-... or chatcmpl-...), "" when the request
	// was refused before one was made.
	ID string `json:"id"`
	// Path is the endpoint, e.g. /v1/chat/completions.
	Path string `json:"path"`
	// Stream tells whether the response was streamed.
	Stream bool `json:"stream"`
	// Arrival is when the handler received the request.
	Arrival time.Time `json:"arrival"`
	// Status is the HTTP status sent (0 when the connection was dropped first).
	Status int `json:"status"`
	// Faults lists the fault kinds applied to the request.
	Faults []string `json:"faults,omitempty"`
	// PromptTokens and CompletionTokens are the request's usage.
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	// Events are the written events in order.
	Events []TraceEvent `json:"events"`
}

// TraceEvent is one written SSE event (or the whole body when not streaming).
type TraceEvent struct {
	// Time is when the event was flushed.
	Time time.Time `json:"time"`
	// Offset is Time minus the record's Arrival, in seconds.
	Offset float64 `json:"offset_s"`
	// Kind is role, content, finish, usage, error, malformed, done or body.
	Kind string `json:"kind"`
	// Tokens is the number of generated tokens the event carries.
	Tokens int `json:"tokens"`
}

// traceLog keeps the most recent records.
type traceLog struct {
	mu    sync.Mutex
	limit int
	recs  []TraceRecord
}

func newTraceLog(limit int) *traceLog { return &traceLog{limit: limit} }

func (t *traceLog) add(r TraceRecord) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.recs) >= t.limit {
		n := copy(t.recs, t.recs[len(t.recs)-t.limit+1:])
		t.recs = t.recs[:n]
	}
	t.recs = append(t.recs, r)
}

func (t *traceLog) all() []TraceRecord {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]TraceRecord, len(t.recs))
	copy(out, t.recs)
	return out
}

func (t *traceLog) reset() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.recs = nil
}

// Trace returns the recorded requests, oldest first (empty unless
// Options.Trace is set).
func (s *Server) Trace() []TraceRecord { return s.trace.all() }

// recorder accumulates one request's trace record.
type recorder struct {
	on  bool
	rec TraceRecord
}

func (rc *recorder) event(kind string, tokens int, at time.Time) {
	if rc == nil || !rc.on {
		return
	}
	rc.rec.Events = append(rc.rec.Events, TraceEvent{Time: at, Offset: at.Sub(rc.rec.Arrival).Seconds(), Kind: kind, Tokens: tokens})
}

func (s *Server) finishTrace(rc *recorder) {
	if rc.on {
		s.trace.add(rc.rec)
	}
}

// handleTrace serves GET /sim/trace (records as JSON, ?request_id= filters)
// and DELETE /sim/trace (clears them).
func (s *Server) handleTrace(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodDelete {
		s.trace.reset()
		w.WriteHeader(http.StatusNoContent)
		return
	}
	recs := s.trace.all()
	if id := r.URL.Query().Get("request_id"); id != "" {
		kept := recs[:0]
		for _, rec := range recs {
			if rec.RequestID == id {
				kept = append(kept, rec)
			}
		}
		recs = kept
	}
	if recs == nil {
		recs = []TraceRecord{}
	}
	writeJSON(w, http.StatusOK, recs)
}
