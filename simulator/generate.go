package simulator

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/vllm-prober/vllm-prober/simulator/engine"
	"github.com/vllm-prober/vllm-prober/simulator/fault"
	"github.com/vllm-prober/vllm-prober/simulator/textgen"
	"github.com/vllm-prober/vllm-prober/simulator/toolcall"
	"github.com/vllm-prober/vllm-prober/simulator/wire"
)

// defaultCompletionMaxTokens is the OpenAI legacy default of /v1/completions.
const defaultCompletionMaxTokens = 16

// call is one accepted generation request.
type call struct {
	chat         bool
	stream       bool
	includeUsage bool
	continuous   bool
	id           string
	model        string
	created      int64
	seqs         []*engine.Seq
	sink         *engine.Sink
	plan         fault.Plan
	rc           *recorder
	// reasoning is the number of reasoning tokens each choice starts with;
	// reasoningOn tells the usage to report them (a chat request to a
	// server with --reasoning-tokens).
	reasoning   int
	reasoningOn bool
	tool        *toolcall.Call // the forced tool call, nil for a text answer
}

// finishReason is the finish reason the client sees for the engine's:
// a "required" tool call that ended normally finishes with tool_calls (a
// named one with stop, as in vLLM).
func (c *call) finishReason(engine string) string {
	if engine == "stop" && c.tool != nil && c.tool.Required {
		return "tool_calls"
	}
	return engine
}

// completionDetails is the usage's completion_tokens_details: nil unless
// the server reasons. The first c.reasoning of a choice's tokens are
// reasoning.
func (c *call) completionDetails(completion int) *wire.CompletionTokensDetails {
	if !c.reasoningOn {
		return nil
	}
	return &wire.CompletionTokensDetails{ReasoningTokens: min(c.reasoning, completion)}
}

func (c *call) promptTokens() int {
	n := 0
	for _, s := range c.seqs {
		n += len(s.PromptIDs)
	}
	return n
}

// handleGenerate serves /v1/completions and /v1/chat/completions.
func (s *Server) handleGenerate(w http.ResponseWriter, r *http.Request, chat bool) {
	rc := &recorder{on: s.o.Trace, rec: TraceRecord{RequestID: r.Header.Get("X-Request-Id"), Path: r.URL.Path, Arrival: time.Now()}}
	defer s.finishTrace(rc)
	c, e := s.newCall(r, chat)
	if e != nil {
		rc.rec.Status = e.status
		s.log.Debug("simulator refused request", "path", r.URL.Path, "status", e.status, "err", e.info.Message)
		writeError(w, e)
		return
	}
	c.rc = rc
	rc.rec.ID, rc.rec.Stream, rc.rec.PromptTokens = c.id, c.stream, c.promptTokens()
	rc.rec.Faults = c.plan.Kinds()
	if s.o.EnableRequestIDHeaders {
		w.Header().Set("X-Request-Id", requestIDHeader(r, c))
	}
	if s.refuseByFault(w, r, c.plan, rc) {
		return
	}
	if c.plan.WrongModel {
		c.model = s.o.Model + "-wrong"
	}
	s.log.Debug("simulator request", "id", c.id, "path", r.URL.Path, "stream", c.stream, "prompt_tokens", c.promptTokens())
	s.eng.Submit(c.seqs...)
	if c.stream {
		s.stream(w, r, c)
	} else {
		s.respond(w, r, c)
	}
}

// refuseByFault applies the faults that come before a response starts: it
// delays the headers when planned, then answers an HTTP error fault. It
// returns true when the request is over (refused or the client left).
func (s *Server) refuseByFault(w http.ResponseWriter, r *http.Request, p fault.Plan, rc *recorder) bool {
	if !s.sleepCtx(r.Context(), p.SlowHeaders) {
		return true
	}
	switch p.Terminal {
	case fault.KindHTTP500:
		rc.rec.Status = 500
		writeError(w, internalError())
	case fault.KindHTTP503:
		rc.rec.Status = 503
		writeError(w, statusError(503, "Service Unavailable"))
	case fault.KindHTTP429:
		rc.rec.Status = 429
		w.Header().Set("Retry-After", "1")
		writeError(w, statusError(429, "Too Many Requests"))
	default:
		return false
	}
	return true
}

func requestIDHeader(r *http.Request, c *call) string {
	if id := r.Header.Get("X-Request-Id"); id != "" {
		return id
	}
	return c.id[strings.IndexByte(c.id, '-')+1:]
}

// newCall validates the request and builds its sequences.
func (s *Server) newCall(r *http.Request, chat bool) (*call, *apiError) {
	var req genRequest
	if e := s.decodeModelRequest(r, &req, &req.Model); e != nil {
		return nil, e
	}
	arrival := time.Now()
	if req.N != nil && *req.N != 1 {
		return nil, badRequest("n", "n=%d is not supported by the simulator; use n=1", *req.N)
	}
	c := &call{chat: chat, stream: req.Stream != nil && *req.Stream, model: s.o.Model, created: time.Now().Unix(), sink: engine.NewSink()}
	if req.StreamOptions != nil {
		if !c.stream {
			return nil, validationError("[{'type': 'value_error', 'loc': ('body',), 'msg': 'Value error, Stream options can only be defined when `stream=True`.'}]")
		}
		c.includeUsage = req.StreamOptions.IncludeUsage != nil && *req.StreamOptions.IncludeUsage
		c.continuous = c.includeUsage && req.StreamOptions.ContinuousUsageStats != nil && *req.StreamOptions.ContinuousUsageStats
	}
	prompts, questions, e := s.requestPrompts(&req, chat)
	if e != nil {
		return nil, e
	}
	if chat {
		if c.tool, e = forcedTool(req.Tools, req.ToolChoice); e != nil {
			return nil, e
		}
		c.reasoningOn, c.reasoning = s.o.ReasoningTokens > 0, s.o.ReasoningTokens
	}
	c.id = s.responseID(r, &req, chat)
	specs := make([]seqSpec, len(prompts))
	for i, p := range prompts {
		sp, e := s.newSeqSpec(&req, chat, p, questions[i])
		if e != nil {
			return nil, e
		}
		specs[i] = sp
	}
	// Faults are drawn for valid requests only, in arrival order.
	c.plan = s.faults.Draw()
	if c.tool == nil {
		c.plan.BadToolCall = false
	} else {
		c.tool.ID = "chatcmpl-tool-" + s.randomHex(32)
	}
	for i, sp := range specs {
		c.seqs = append(c.seqs, s.newSeq(c, i, sp, arrival))
	}
	return c, nil
}

// forcedTool is toolcall.Forced with its refusal as the error vLLM answers.
func forcedTool(rawTools, rawChoice json.RawMessage) (*toolcall.Call, *apiError) {
	tc, err := toolcall.Forced(rawTools, rawChoice)
	switch {
	case err == nil:
		return tc, nil
	case err.Validation:
		return nil, validationError("%s", err.Message)
	}
	return nil, badRequest("tools", "%s", err.Message)
}

// newSeq builds the engine sequence of one prompt: c.reasoning reasoning
// tokens, then the answer (text, or the arguments of c's tool call).
func (s *Server) newSeq(c *call, choice int, sp seqSpec, arrival time.Time) *engine.Seq {
	ans := textgen.NewGeneration(s.o.Seed, sp.question, c.plan.BadAnswer, c.plan.Variant)
	if c.tool != nil {
		ans = textgen.NewFixedGeneration(toolcall.Arguments(c.tool.Params, sp.question, c.plan.BadToolCall), " ")
	}
	sq := &engine.Seq{Choice: choice, PromptIDs: sp.ids, MaxTokens: sp.maxTokens, Text: ans.Token, Sink: c.sink, Arrival: arrival}
	r := min(c.reasoning, sp.maxTokens)
	if r == 0 {
		sq.Target, sq.FinishReason = ans.Plan(sp.maxTokens, sp.minTokens, sp.ignoreEOS)
		return sq
	}
	think := textgen.NewReasoning(s.o.Seed, sp.question, c.plan.Variant)
	sq.Reasoning = r
	sq.Text = func(i int) string {
		if i < r {
			return think.Token(i)
		}
		return ans.Token(i - r)
	}
	if r == sp.maxTokens {
		sq.Target, sq.FinishReason = r, "length"
		return sq
	}
	n, finish := ans.Plan(sp.maxTokens-r, max(sp.minTokens-r, 0), sp.ignoreEOS)
	sq.Target, sq.FinishReason = r+n, finish
	return sq
}

// seqSpec is one prompt of a request with its checked token limits.
type seqSpec struct {
	ids                  []int
	question             string // what the answer rule reads
	maxTokens, minTokens int
	ignoreEOS            bool
}

// requestPrompts returns the prompts and, for each, the text the answer
// rule reads.
func (s *Server) requestPrompts(req *genRequest, chat bool) ([]prompt, []string, *apiError) {
	if chat {
		text, lastUser, e := renderChat(req.Messages)
		if e != nil {
			return nil, nil, e
		}
		return []prompt{{text: text, ids: s.tok.Encode(text)}}, []string{lastUser}, nil
	}
	prompts, e := s.parsePrompts(req.Prompt, "prompt")
	if e != nil {
		return nil, nil, e
	}
	questions := make([]string, len(prompts))
	for i, p := range prompts {
		questions[i] = p.text
	}
	return prompts, questions, nil
}

func (s *Server) responseID(r *http.Request, req *genRequest, chat bool) string {
	prefix := "cmpl-"
	if chat {
		prefix = "chatcmpl-"
	}
	if id := r.Header.Get("X-Request-Id"); id != "" {
		return prefix + id
	}
	if req.RequestID != nil && *req.RequestID != "" {
		return prefix + *req.RequestID
	}
	return prefix + s.randomHex(16)
}

// newSeqSpec checks the token limits of one prompt.
func (s *Server) newSeqSpec(req *genRequest, chat bool, p prompt, question string) (seqSpec, *apiError) {
	maxTokens, e := s.maxTokens(req, chat, len(p.ids))
	if e != nil {
		return seqSpec{}, e
	}
	minTokens := 0
	if req.MinTokens != nil {
		minTokens = *req.MinTokens
	}
	if minTokens < 0 || minTokens > maxTokens {
		return seqSpec{}, badRequest("min_tokens", "min_tokens must be greater than or equal to 0 and less than or equal to max_tokens=%d, got %d.", maxTokens, minTokens)
	}
	if question == "" && p.text == "" {
		question = idsKey(p.ids)
	}
	return seqSpec{ids: p.ids, question: question, maxTokens: maxTokens, minTokens: minTokens,
		ignoreEOS: req.IgnoreEOS != nil && *req.IgnoreEOS}, nil
}

// maxTokens returns the effective max_tokens of a prompt, refusing limits
// the way vLLM does.
func (s *Server) maxTokens(req *genRequest, chat bool, promptLen int) (int, *apiError) {
	limit := s.o.MaxModelLen
	if promptLen >= limit {
		return 0, badRequest("input_tokens", "This model's maximum context length is %d tokens. However, your request has %d input tokens. Please reduce the length of the input messages. (parameter=input_tokens, value=%d)", limit, promptLen, promptLen)
	}
	param, requested := "max_tokens", req.MaxTokens
	if chat && req.MaxCompletionTokens != nil {
		param, requested = "max_completion_tokens", req.MaxCompletionTokens
	}
	if requested == nil {
		if chat {
			return limit - promptLen, nil
		}
		return min(defaultCompletionMaxTokens, limit-promptLen), nil
	}
	n := *requested
	switch {
	case n < 1:
		return 0, badRequest(param, "%s must be at least 1, got %d. (parameter=%s, value=%d)", param, n, param, n)
	case n > limit:
		return 0, badRequest(param, "%s=%d cannot be greater than max_model_len=max_total_tokens=%d. Please request fewer output tokens. (parameter=%s, value=%d)", param, n, limit, param, n)
	case promptLen+n > limit:
		return 0, badRequest("input_tokens", "This model's maximum context length is %d tokens. However, you requested %d output tokens and your prompt contains %d input tokens, for a total of %d tokens. Please reduce the length of the input prompt or the number of requested output tokens. (parameter=input_tokens, value=%d)", limit, n, promptLen, promptLen+n, promptLen)
	}
	return n, nil
}

// idsKey stands for a token-id prompt in the answer rule's seed.
func idsKey(ids []int) string {
	var b strings.Builder
	for _, id := range ids {
		b.WriteString(strconv.Itoa(id))
		b.WriteByte(',')
	}
	return b.String()
}
