// Package probe holds the vocabulary every part of the prober shares: the
// Result of one offered request, its one Disposition and reason, the SLO,
// check and phase names, and the Sink that hears the life of every pair.
// The work is done in its subpackages, one job each:
//
//   - schedule runs one open-loop loop per (target, probe) pair and tells
//     the sinks what started, stopped, was offered and finished;
//   - client sends one request, measures it and judges it;
//   - stream reads the server-sent event stream and decodes its chunks;
//   - workload hands out what each request sends;
//   - judge turns the measured facts into the disposition;
//   - ledger writes and reads the JSON Lines ledger;
//   - history keeps the recent records in memory.
//
// None of them touches Prometheus types: the collector, the status
// tracker, the ledger and the history are sinks of the schedule engine.
package probe

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Disposition is the one terminal outcome of an offered request.
type Disposition string

// Dispositions, in the order the judge checks them (docs/design.md, "Dispositions and accounting").
const (
	ServerFailure  Disposition = "server_failure"
	ClientTimeout  Disposition = "client_timeout"
	Cancelled      Disposition = "cancelled"
	QualityFailure Disposition = "quality_failure"
	LatencyFailure Disposition = "latency_failure"
	Accepted       Disposition = "accepted"
	// Unfinished is used only by bench and capacity runs that end with
	// requests outstanding.
	Unfinished Disposition = "unfinished"
)

// Dispositions lists every disposition the daemon produces, in judge order.
var Dispositions = []Disposition{ServerFailure, ClientTimeout, Cancelled, QualityFailure, LatencyFailure, Accepted}

// Reasons: the bounded set of values of Result.Reason, a finer cause of a
// disposition other than accepted. The metric label `reason` takes these.
const (
	ReasonConnect        = "connect"         // connection refused or reset before a response
	ReasonDNS            = "dns"             // name resolution failed
	ReasonTLS            = "tls"             // TLS handshake failed
	ReasonHTTP4xx        = "http_4xx"        // a 4xx status other than 429
	ReasonHTTP429        = "http_429"        // rate limited
	ReasonHTTP5xx        = "http_5xx"        // a 5xx status
	ReasonRedirect       = "redirect"        // a 3xx status: redirect not followed (config.NewHTTPClient)
	ReasonStreamError    = "stream_error"    // an in-stream {"error": ...} event
	ReasonProtocol       = "protocol"        // malformed event, oversized line or body, wrong content type
	ReasonDisconnect     = "disconnect"      // the body ended with a read error before [DONE]
	ReasonNoDone         = "no_done"         // the body ended cleanly without [DONE]
	ReasonModelDiscovery = "model_discovery" // the model could not be found from /v1/models
	ReasonTimeout        = "timeout"         // client_timeout
	ReasonShutdown       = "shutdown"        // cancelled: the daemon is stopping
	ReasonInFlightCap    = "in_flight_cap"   // cancelled: max_in_flight reached, never sent
	ReasonRemoved        = "removed"         // cancelled: the probe or target was removed by a reload
	ReasonQuality        = "quality"         // quality_failure; the checks are in QualityFailures
	ReasonLatency        = "latency"         // latency_failure; the SLOs are in SLOViolations
)

// Reasons lists every reason value, for pre-initialising counters.
var Reasons = []string{
	ReasonConnect, ReasonDNS, ReasonTLS, ReasonHTTP4xx, ReasonHTTP429, ReasonHTTP5xx,
	ReasonStreamError, ReasonProtocol, ReasonDisconnect, ReasonNoDone, ReasonModelDiscovery,
	ReasonTimeout, ReasonShutdown, ReasonInFlightCap, ReasonRemoved, ReasonQuality, ReasonLatency,
	ReasonRedirect,
}

// SLO names, the values of the metric label `slo`.
const (
	SLOTTFT = "ttft"
	SLOTPOT = "tpot"
	SLOE2EL = "e2el"
	SLOTTFA = "ttfa" // time to first answer token
)

// SLOs lists every SLO name.
var SLOs = []string{SLOTTFT, SLOTPOT, SLOE2EL, SLOTTFA}

// Quality check names, the values of the metric label `check`.
const (
	CheckModel           = "model"
	CheckFinishReason    = "finish_reason"
	CheckMinOutputTokens = "min_output_tokens"
	CheckMaxOutputTokens = "max_output_tokens"
	CheckRegex           = "regex"
	CheckJSON            = "json"
	CheckJSONSchema      = "json_schema"
	CheckExpect          = "expect"
	// CheckEmbeddingDim fails an embeddings response whose vector has
	// another length than quality.embedding_dim or a value that is not a
	// finite number.
	CheckEmbeddingDim = "embedding_dim"
	CheckToolCall     = "tool_call"
)

// Checks lists every quality check name.
var Checks = []string{CheckModel, CheckFinishReason, CheckMinOutputTokens, CheckMaxOutputTokens, CheckRegex, CheckJSON, CheckJSONSchema, CheckExpect,
	CheckEmbeddingDim, CheckToolCall}

// HTTP phase names, the values of the metric label `phase`.
const (
	PhaseDNS        = "dns"
	PhaseConnect    = "connect"
	PhaseTLS        = "tls"
	PhaseHeaders    = "headers"     // request written -> response headers
	PhaseFirstToken = "first_token" // headers -> TTFT
	PhaseDecode     = "decode"      // TTFT -> E2EL
)

// Phases lists every HTTP phase name.
var Phases = []string{PhaseDNS, PhaseConnect, PhaseTLS, PhaseHeaders, PhaseFirstToken, PhaseDecode}

// Errors used as context causes, so the requester can tell why a request's
// context ended (context.WithCancelCause).
var (
	ErrShutdown = errors.New("prober shutting down")
	ErrRemoved  = errors.New("probe removed by reload")
)

// PhaseTimes holds HTTP phase durations; a phase that did not happen (a
// reused connection has no dns/connect/tls) is absent from the map.
type PhaseTimes map[string]time.Duration

// ServerTiming is vLLM's per-request `metrics` object, when the server
// sends one (--enable-per-request-metrics) with either time.
type ServerTiming struct {
	// QueueTime is negative when the server sent none; 0 is a request it
	// scheduled at once.
	QueueTime time.Duration
	TTFT      time.Duration // starts at first scheduling: excludes queue time; 0 when not sent
}

// ToolCall is one function call the model made, assembled from its
// streamed fragments: ID and Name from the first fragment that carries
// them, Arguments the concatenation of every fragment's arguments.
type ToolCall struct {
	ID        string
	Name      string
	Arguments string
}

// Result is everything known about one offered request when it ends.
// Durations that were not measured are zero: TTFT needs a token-carrying
// event (reasoning counts), TTFA an answer-carrying one; E2EL and TPOT
// need a stream that finished with [DONE] (TPOT also more than one output
// token). A request cut short keeps what it measured and its Elapsed
// time; latency views censor a client_timeout at Elapsed (ObservedTTFT,
// ObservedTTFA, ObservedE2EL).
type Result struct {
	Seq       uint64 // per pair, from 1, in planned order
	Target    string
	Probe     string
	Replica   string // a discovered replica's host:port; "" for a gateway or static target
	RequestID string // sent as X-Request-Id

	Scheduled time.Time     // planned send time (wall clock)
	Sent      time.Time     // actual send time; zero if never sent
	Lag       time.Duration // Sent - Scheduled

	Disposition     Disposition
	Reason          string   // one of Reasons; "" when accepted
	SLOViolations   []string // every SLO violated, even when another disposition wins
	QualityFailures []string // every quality check that failed
	Flags           []string // other diagnostics, e.g. "no_usage"

	HTTPStatus int
	TTFT       time.Duration
	// TTFA is the time to the first answer token: the first event that
	// carries content, completion text or a tool call, after any
	// reasoning (docs/design.md, "Reasoning and tool calls").
	TTFA time.Duration
	TPOT time.Duration
	E2EL time.Duration
	// ITLs holds one gap per pair of consecutive token-carrying events;
	// ITLTokens[i] is the number of tokens the later event of the pair
	// carried (0 when the server did not say).
	ITLs      []time.Duration
	ITLTokens []int
	Phases    PhaseTimes
	// Elapsed is the time from Sent until the request ended as the client
	// saw it: the stream read to its end, a failure, or the probe timeout.
	// A client_timeout that came before its send (the target did not
	// answer the model discovery or the workload's calibration in time)
	// counts from the start of its timeout; any other request never sent
	// has zero.
	Elapsed time.Duration

	PromptTokens    int
	OutputTokens    int
	Chunks          int  // token-carrying events
	UsageFromServer bool // false: token counts were estimated locally
	FinishReason    string
	Model           string // the model the server named in its response
	// OtherModel is a model named by a later event of the same response
	// that differs from Model ("" when every event agreed).
	OtherModel string
	Server     *ServerTiming

	// ReasoningTokens is the server's usage.completion_tokens_details.
	// reasoning_tokens when it sent one, else the number of events that
	// carried reasoning; ReasoningEvents is that number of events.
	ReasoningTokens int
	ReasoningEvents int
	// ToolCalls are the function calls of the answer, by index.
	ToolCalls []ToolCall

	Error string // a short, secret-free description of what went wrong
	// Text is the answer: chat content or completion text, never the
	// reasoning, which is in Reasoning. Quality checks judge Text.
	Text      string
	Reasoning string
	// Fingerprint is the output fingerprint of a request of a probe with
	// `fingerprint` whose stream completed; nil otherwise.
	Fingerprint *OutputFingerprint

	// Embeddings marks a request of an embeddings probe. It generates no
	// tokens: TTFT, ITL and TPOT do not exist, so a client timeout is
	// censored into E2EL only (ObservedTTFT).
	Embeddings bool
	// EmbeddingDim is the length of the vector an embeddings response
	// carried and EmbeddingNotFinite how many of its values were not
	// finite numbers (null, a string, a number past float64's range).
	EmbeddingDim       int
	EmbeddingNotFinite int

	// Level and Repeat place a request of a capacity run: the offered rate
	// of its level (req/s) and its repeat, from 1. Repeat 0 = not a
	// capacity run.
	Level  float64
	Repeat int
}

// OutputFingerprint is what the output drift canary learned from one
// request (docs/design.md, "Output fingerprint").
type OutputFingerprint struct {
	// Prompt is the index of the request's prompt in the probe's prompts.
	Prompt int
	// Hash is the hash of the text of the answer's first tokens, in hex.
	Hash string
	// Changed reports that this request confirmed a change of its
	// prompt's fingerprint; set by the engine, counted once.
	Changed bool
}

// Abandoned reports whether the prober itself gave the request up for its
// own reasons (process shutdown, a reload that removed the pair). Abandoned
// requests are the only ones left out of the acceptance denominator; a
// request cancelled at max_in_flight is overload shedding and stays in it.
func (r *Result) Abandoned() bool {
	return r.Disposition == Cancelled && (r.Reason == ReasonShutdown || r.Reason == ReasonRemoved)
}

// ServerCompleted reports whether the server completed a terminal response
// to the request, useful or not: accepted, latency_failure and
// quality_failure, and a server_failure for which the server answered with
// an HTTP status and ended the body itself (an error or redirect status, an in-stream
// error event, a malformed stream, a stream without [DONE]). A connection
// broken mid-body, a failure before any response, a client timeout, a
// cancellation and an unfinished request are not completed. Completed
// throughput counts these requests per second of wall-clock time.
func (r *Result) ServerCompleted() bool {
	switch r.Disposition {
	case Accepted, LatencyFailure, QualityFailure:
		return true
	case ServerFailure:
		return slices.Contains(CompletedFailureReasons, r.Reason)
	}
	return false
}

// CompletedFailureReasons are the server_failure reasons for which the
// server answered and ended the response itself, so the request counts as
// completed (see ServerCompleted). Rules and dashboards select the same
// reasons from vllm_probe_failures_total.
var CompletedFailureReasons = []string{ReasonHTTP4xx, ReasonHTTP429, ReasonHTTP5xx, ReasonRedirect, ReasonStreamError, ReasonProtocol, ReasonNoDone}

// ObservedTTFT returns the TTFT latency views record for r: the measured
// TTFT, or for a client_timeout that got no token the time it was
// abandoned after (censored at the timeout). ok is false when there is
// nothing to record, as for every embeddings request.
func (r *Result) ObservedTTFT() (d time.Duration, ok bool) {
	if r.TTFT > 0 {
		return r.TTFT, true
	}
	return r.censored()
}

// ObservedTTFA returns the TTFA latency views record for r, as
// ObservedTTFT does for TTFT: the measured TTFA, or for a client_timeout
// that got no answer the time it was abandoned after.
func (r *Result) ObservedTTFA() (d time.Duration, ok bool) {
	if r.TTFA > 0 {
		return r.TTFA, true
	}
	return r.censored()
}

// ObservedE2EL returns the E2EL latency views record for r: the measured
// E2EL of a finished stream, or for a client_timeout the time it was
// abandoned after (censored at the timeout). ok is false when there is
// nothing to record.
func (r *Result) ObservedE2EL() (d time.Duration, ok bool) {
	if r.E2EL > 0 {
		return r.E2EL, true
	}
	return r.censoredE2EL()
}

// censored returns what a token latency view (TTFT, and any other time to
// a token) records for a request that timed out before the token: Elapsed,
// except for an embeddings request, which waits for no token and is
// censored into E2EL only (censoredE2EL).
func (r *Result) censored() (time.Duration, bool) {
	if r.Embeddings {
		return 0, false
	}
	return r.censoredE2EL()
}

// censoredE2EL returns Elapsed for a request that timed out: timeouts
// are never dropped from latency views. bench/stats censors at the
// configured timeout instead (docs/design.md, section 6, "Timeouts are
// never dropped").
func (r *Result) censoredE2EL() (time.Duration, bool) {
	if r.Disposition == ClientTimeout && r.Elapsed > 0 {
		return r.Elapsed, true
	}
	return 0, false
}

// ITLMax returns the largest inter-token gap, or 0.
func (r *Result) ITLMax() time.Duration {
	var m time.Duration
	for _, d := range r.ITLs {
		m = max(m, d)
	}
	return m
}

// AnswerText is the answer as the ledger records it: Text, then each tool
// call as name(arguments) on a line of its own, so a request that failed
// the tool_call check shows the call it was judged on.
func (r *Result) AnswerText() string {
	var b strings.Builder
	b.WriteString(r.Text)
	for i, c := range r.ToolCalls {
		if i > 0 || r.Text != "" {
			b.WriteByte('\n')
		}
		b.WriteString(c.Name + "(" + c.Arguments + ")")
	}
	return b.String()
}

// RequestID is the X-Request-Id the prober sends with request seq of a
// pair: readable (target, probe and seq, joined by "-") and unique across
// restarts by nonce, a random number written as 8 hexadecimal digits.
func RequestID(target, probeName string, seq uint64, nonce uint32) string {
	b := make([]byte, 0, len(target)+len(probeName)+31)
	b = append(append(append(b, target...), '-'), probeName...)
	b = strconv.AppendUint(append(b, '-'), seq, 10)
	b = hex.AppendEncode(append(b, '-'), binary.BigEndian.AppendUint32(nil, nonce))
	return string(b)
}

// RequestNonce returns the nonce of id when id is RequestID(target,
// probeName, seq, nonce) for some nonce, and false for any other id (a
// server's or a user's).
func RequestNonce(id, target, probeName string, seq uint64) (uint32, bool) {
	if len(id) < 8 {
		return 0, false
	}
	v, err := strconv.ParseUint(id[len(id)-8:], 16, 32)
	if err != nil || RequestID(target, probeName, seq, uint32(v)) != id {
		return 0, false
	}
	return uint32(v), true
}
