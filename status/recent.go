package status

import (
	"math"
	"slices"
	"time"

	"github.com/vllm-prober/vllm-prober/probe"
)

// recentRequests is how many requests per pair the detail page lists with
// their HTTP phases.
const recentRequests = 20

// RequestView is one recent request on the detail page: its phases, the
// client's and, when the server sent per-request metrics, the server's
// TTFT, and what a reasoning or tool-calling probe's answer held.
type RequestView struct {
	Scheduled   time.Time
	Disposition probe.Disposition
	Reason      string
	HTTPStatus  int
	// phases are the durations of probe.Phases, in that order: a pair's
	// 20 recent requests keep them inline rather than in a map each
	// (~4.5 KiB a pair).
	phases           [maxPhases]time.Duration
	TTFT, TTFA, E2EL time.Duration
	// ReasoningTokens is probe.Result.ReasoningTokens, 0 when the answer
	// had no reasoning.
	ReasoningTokens int32
	// ToolCalls is the number of the answer's function calls and ToolName
	// the first one's name.
	ToolCalls int32
	ToolName  string
	// Server is the server's own timing (vLLM's per-request metrics); nil
	// when the server sent none.
	Server *probe.ServerTiming
	Error  string
}

// maxPhases bounds probe.Phases (TestRecentKeepsEveryPhase).
const maxPhases = 8

// Phase returns the duration of an HTTP phase, 0 when it did not happen.
func (v RequestView) Phase(name string) time.Duration {
	if i := slices.Index(probe.Phases, name); i >= 0 && i < maxPhases {
		return v.phases[i]
	}
	return 0
}

// recentRing keeps the last recentRequests requests of a pair. Its
// buffer grows to recentRequests as they come (~4 KiB when full), so a
// pair that ran few requests holds few.
type recentRing struct {
	buf  []RequestView
	next int // where the next request goes once buf is full
}

func (r *recentRing) add(res *probe.Result) {
	v := RequestView{Scheduled: res.Scheduled, Disposition: res.Disposition, Reason: res.Reason,
		HTTPStatus: res.HTTPStatus, TTFT: res.TTFT, TTFA: res.TTFA, E2EL: res.E2EL, Error: res.Error,
		ReasoningTokens: int32(min(res.ReasoningTokens, math.MaxInt32)), ToolCalls: int32(min(len(res.ToolCalls), math.MaxInt32))}
	if len(res.ToolCalls) > 0 {
		v.ToolName = res.ToolCalls[0].Name
	}
	for i, name := range probe.Phases[:min(len(probe.Phases), maxPhases)] {
		v.phases[i] = res.Phases[name]
	}
	if res.Server != nil {
		s := *res.Server
		v.Server = &s
	}
	if len(r.buf) < recentRequests {
		r.buf = insertBounded(r.buf, len(r.buf), v, recentRequests)
		return
	}
	r.buf[r.next] = v
	r.next = (r.next + 1) % recentRequests
}

// newestFirst returns the kept requests, the last one to end first.
func (r *recentRing) newestFirst() []RequestView {
	n := len(r.buf)
	out := make([]RequestView, 0, n)
	for i := 1; i <= n; i++ {
		out = append(out, r.buf[(r.next-i+n)%n])
	}
	return out
}
