package client

import (
	"time"

	"github.com/vllm-prober/vllm-prober/probe"
	"github.com/vllm-prober/vllm-prober/probe/fingerprint"
	"github.com/vllm-prober/vllm-prober/probe/stream"
)

// flagNoUsage marks a Result whose token counts were estimated because the
// server sent no usage object.
const flagNoUsage = "no_usage"

// measurement accumulates the client's view of one stream, event by event,
// as docs/design.md, "Measurement (client side)", defines it.
type measurement struct {
	start   time.Time // immediately before the request was written
	headers time.Time // response headers received
	clock   *arrivalClock
	timing  Timing

	first, last time.Time // first and last token-carrying events
	chunks      int
	// tokenEvents counts the events that carried a generated token (text,
	// reasoning, a tool call or a rising continuous usage count): chunks
	// without vllm bench serve's empty choice events (the chat role
	// chunk, a finish-only chunk). Without usage it is the output token
	// count, so an empty event does not count as a token.
	tokenEvents int
	itls        []time.Duration
	itlTokens   []int

	hasUsage   bool
	usage      stream.Usage // the last usage object seen
	contTokens int          // running completion_tokens of choice chunks

	finish     string
	model      string // named by the first event that names one
	otherModel string // the first different model a later event named
	server     *probe.ServerTiming
	answer     answer
	fp         *fingerprint.Hasher // nil: the probe has no fingerprint
}

// observe applies one decoded event that arrived at at; it fails on an
// event whose tool calls are malformed.
func (m *measurement) observe(c *stream.Chunk, at time.Time) error {
	if err := m.answer.observe(c, at); err != nil {
		return err
	}
	switch {
	case m.model == "":
		m.model = c.Model
	case c.Model != "" && c.Model != m.model && m.otherModel == "":
		m.otherModel = c.Model
	}
	carried := false
	for i := range c.Choices {
		ch := &c.Choices[i]
		if ch.Delta.HasToolCall() {
			carried = true
		}
		if ch.Text != "" || ch.Delta.Content != "" || ch.Delta.ReasoningText() != "" {
			carried = true
		}
		if ch.FinishReason != nil && *ch.FinishReason != "" {
			m.finish = *ch.FinishReason
		}
	}
	tokens := 0
	if c.Usage != nil {
		m.hasUsage = true
		m.usage = *c.Usage
		// Continuous usage on a choice chunk: a rising completion count
		// means the event carried tokens even when their text is empty.
		if len(c.Choices) > 0 && c.Usage.CompletionTokens > m.contTokens {
			tokens = c.Usage.CompletionTokens - m.contTokens
			m.contTokens = c.Usage.CompletionTokens
			carried = true
		}
	}
	if st := serverTiming(c.Metrics); st != nil {
		m.server = st
	}
	tokenCarrying := carried
	if m.timing == TimingVLLMBench {
		carried = m.vllmCarried(c, at)
	}
	if !carried {
		return nil
	}
	if tokenCarrying {
		m.tokenEvents++
	}
	if m.fp != nil {
		m.fp.Add(generatedText(c), tokens)
	}
	if m.chunks == 0 {
		m.first = at
	} else {
		m.itls = append(m.itls, at.Sub(m.last))
		m.itlTokens = append(m.itlTokens, tokens)
	}
	m.last = at
	m.chunks++
	return nil
}

// fill writes the measurement into res. complete says the stream ended
// with [DONE]: only then are E2EL, TPOT and the decode phase known (a
// stream cut short has no last token; TimingVLLMBench excepted) and a
// missing usage object flagged.
// knownPromptTokens is the workload's own count, used without usage.
func (m *measurement) fill(res *probe.Result, complete bool, knownPromptTokens int) {
	res.Model, res.OtherModel = m.model, m.otherModel
	res.FinishReason = m.finish
	res.Server = m.server
	m.answer.fill(res, m.start)
	res.Chunks = m.chunks
	res.ITLs = m.itls
	res.ITLTokens = m.itlTokens
	if m.chunks > 0 {
		res.TTFT = m.first.Sub(m.start)
		if !m.headers.IsZero() {
			setPhase(res, probe.PhaseFirstToken, m.first.Sub(m.headers))
		}
	}
	// vllm bench serve keeps the latency of any stream that had a choice
	// event, finished or not; bench compares with it line by line.
	if m.chunks > 0 && (complete || m.timing == TimingVLLMBench) {
		res.E2EL = m.last.Sub(m.start)
		setPhase(res, probe.PhaseDecode, m.last.Sub(m.first))
	}
	if m.hasUsage {
		res.UsageFromServer = true
		res.PromptTokens = m.usage.PromptTokens
		res.OutputTokens = m.usage.CompletionTokens
	} else {
		res.PromptTokens = knownPromptTokens
		res.OutputTokens = m.tokenEvents
		if complete {
			res.Flags = append(res.Flags, flagNoUsage)
		}
	}
	if res.OutputTokens > 1 && res.E2EL > 0 {
		res.TPOT = (res.E2EL - res.TTFT) / time.Duration(res.OutputTokens-1)
	}
}

// setPhase records a phase duration in r, creating the map on first use.
func setPhase(r *probe.Result, name string, d time.Duration) {
	if r.Phases == nil {
		r.Phases = probe.PhaseTimes{}
	}
	r.Phases[name] = d
}

// serverTiming converts vLLM's metrics object, or returns nil when it carries
// neither time.
func serverTiming(m *stream.Metrics) *probe.ServerTiming {
	if m == nil || (m.QueueTimeMS == nil && m.TTFTMS == nil) {
		return nil
	}
	st := &probe.ServerTiming{QueueTime: -1}
	if m.QueueTimeMS != nil {
		st.QueueTime = msDuration(*m.QueueTimeMS)
	}
	if m.TTFTMS != nil {
		st.TTFT = msDuration(*m.TTFTMS)
	}
	return st
}

func msDuration(ms float64) time.Duration {
	const maxMS = float64(1<<62) / float64(time.Millisecond)
	if ms < 0 || ms != ms {
		return 0
	}
	if ms > maxMS {
		ms = maxMS
	}
	return time.Duration(ms * float64(time.Millisecond))
}
