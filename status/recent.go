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
	// phases are the durations of probe.Phases, in that order, inline
	// rather than in a map.
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

// recentRequest is a RequestView as a pair's recent ring keeps it, ~136
// bytes rather than ~200: latencies as compactDuration (the same numbers on
// the page, which shows milliseconds with one decimal), the time as Unix
// nanoseconds, the server's timing inline. Disposition, Reason and
// ToolName are the probe's strings, shared rather than copied.
type recentRequest struct {
	scheduled             int64 // Unix nanoseconds; 0 for a zero time
	disposition           probe.Disposition
	reason, toolName, err string
	phases                [maxPhases]compactDuration
	ttft, ttfa, e2el      compactDuration
	serverQueue           compactDuration
	serverTTFT            compactDuration
	reasoning, toolCalls  int32
	httpStatus            int16
	hasServer             bool
}

func newRecentRequest(res *probe.Result) recentRequest {
	v := recentRequest{disposition: res.Disposition, reason: res.Reason, err: res.Error,
		httpStatus: int16(min(max(res.HTTPStatus, math.MinInt16), math.MaxInt16)),
		ttft:       compact(res.TTFT), ttfa: compact(res.TTFA), e2el: compact(res.E2EL),
		reasoning: int32(min(res.ReasoningTokens, math.MaxInt32)), toolCalls: int32(min(len(res.ToolCalls), math.MaxInt32))}
	if !res.Scheduled.IsZero() {
		v.scheduled = res.Scheduled.UnixNano()
	}
	if len(res.ToolCalls) > 0 {
		v.toolName = res.ToolCalls[0].Name
	}
	for i, name := range probe.Phases[:min(len(probe.Phases), maxPhases)] {
		v.phases[i] = compact(res.Phases[name])
	}
	if res.Server != nil {
		v.hasServer, v.serverQueue, v.serverTTFT = true, compact(res.Server.QueueTime), compact(res.Server.TTFT)
	}
	return v
}

func (r *recentRequest) view() RequestView {
	v := RequestView{Disposition: r.disposition, Reason: r.reason, HTTPStatus: int(r.httpStatus),
		TTFT: r.ttft.duration(), TTFA: r.ttfa.duration(), E2EL: r.e2el.duration(), Error: r.err,
		ReasoningTokens: r.reasoning, ToolCalls: r.toolCalls, ToolName: r.toolName}
	if r.scheduled != 0 {
		v.Scheduled = time.Unix(0, r.scheduled)
	}
	for i, c := range r.phases {
		v.phases[i] = c.duration()
	}
	if r.hasServer {
		v.Server = &probe.ServerTiming{QueueTime: r.serverQueue.duration(), TTFT: r.serverTTFT.duration()}
	}
	return v
}

// recentRing keeps the last recentRequests requests of a pair. Its
// buffer grows to recentRequests as they come (~2.7 KiB when full), so a
// pair that ran few requests holds few.
type recentRing struct {
	buf  []recentRequest
	next int // where the next request goes once buf is full
}

func (r *recentRing) add(res *probe.Result) {
	v := newRecentRequest(res)
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
		out = append(out, r.buf[(r.next-i+n)%n].view())
	}
	return out
}
