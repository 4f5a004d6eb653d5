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

// recentRequest is a RequestView as a pair's recent ring keeps it, 64
// bytes rather than ~200: latencies as compactDuration (exact below
// 2.1 s, to the microsecond above), the time as Unix
// nanoseconds, the disposition and reason as their place in probe's lists,
// and what most requests lack (an error, tool calls, reasoning, the
// server's timing) in an extra allocated only for those that have it.
type recentRequest struct {
	scheduled           int64 // Unix nanoseconds; 0 for a zero time
	phases              [maxPhases]compactDuration
	ttft, ttfa, e2el    compactDuration
	httpStatus          int16
	disposition, reason listed
	extra               *recentExtra
}

// recentExtra is what a recent request rarely has.
type recentExtra struct {
	disposition           probe.Disposition // one not in probe.Dispositions
	reason, toolName, err string
	server                *probe.ServerTiming
	reasoning, toolCalls  int32
}

// listed is a value's place in a fixed list plus one; 0 is "", unlisted
// a value not in the list, kept in the request's extra.
type listed uint8

const unlisted = listed(math.MaxUint8)

func listIndex[S ~string](list []S, v S) listed {
	if v == "" {
		return 0
	}
	if i := slices.Index(list, v); i >= 0 && i < int(unlisted)-1 {
		return listed(i + 1)
	}
	return unlisted
}

func newRecentRequest(res *probe.Result) recentRequest {
	v := recentRequest{httpStatus: int16(min(max(res.HTTPStatus, math.MinInt16), math.MaxInt16)),
		ttft: compact(res.TTFT), ttfa: compact(res.TTFA), e2el: compact(res.E2EL),
		disposition: listIndex(probe.Dispositions, res.Disposition), reason: listIndex(probe.Reasons, res.Reason)}
	if !res.Scheduled.IsZero() {
		v.scheduled = res.Scheduled.UnixNano()
	}
	for i, name := range probe.Phases[:min(len(probe.Phases), maxPhases)] {
		v.phases[i] = compact(res.Phases[name])
	}
	if v.disposition == unlisted || v.reason == unlisted || res.Error != "" || len(res.ToolCalls) > 0 ||
		res.ReasoningTokens > 0 || res.Server != nil {
		x := &recentExtra{err: res.Error, reasoning: int32(min(res.ReasoningTokens, math.MaxInt32)),
			toolCalls: int32(min(len(res.ToolCalls), math.MaxInt32))}
		if v.disposition == unlisted {
			x.disposition = res.Disposition
		}
		if v.reason == unlisted {
			x.reason = res.Reason
		}
		if len(res.ToolCalls) > 0 {
			x.toolName = res.ToolCalls[0].Name
		}
		if res.Server != nil {
			s := *res.Server
			x.server = &s
		}
		v.extra = x
	}
	return v
}

func (r *recentRequest) view() RequestView {
	v := RequestView{HTTPStatus: int(r.httpStatus), TTFT: r.ttft.duration(), TTFA: r.ttfa.duration(), E2EL: r.e2el.duration()}
	if r.scheduled != 0 {
		v.Scheduled = time.Unix(0, r.scheduled)
	}
	for i, c := range r.phases {
		v.phases[i] = c.duration()
	}
	if r.disposition > 0 && r.disposition != unlisted {
		v.Disposition = probe.Dispositions[r.disposition-1]
	}
	if r.reason > 0 && r.reason != unlisted {
		v.Reason = probe.Reasons[r.reason-1]
	}
	if x := r.extra; x != nil {
		if r.disposition == unlisted {
			v.Disposition = x.disposition
		}
		if r.reason == unlisted {
			v.Reason = x.reason
		}
		v.Error, v.ToolName, v.ReasoningTokens, v.ToolCalls = x.err, x.toolName, x.reasoning, x.toolCalls
		if x.server != nil {
			s := *x.server
			v.Server = &s
		}
	}
	return v
}

// recentRing keeps the last recentRequests requests of a pair. Its
// buffer grows to recentRequests as they come (~1.3 KiB when full), so a
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
