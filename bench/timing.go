package bench

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/vllm-prober/vllm-prober/probe"
)

// maxMessage bounds one SSE message of a response.
const maxMessage = 1 << 20

// Stream errors that make a request a server_failure.
var (
	errNoDone      = errors.New("stream ended without [DONE]")
	errStreamError = errors.New("in-stream error event")
	errNoChoices   = errors.New("never received a valid chunk to calculate TTFT")
	errMalformed   = errors.New("malformed event")
)

// benchChunk is the part of a streamed chunk vLLM's client reads.
type benchChunk struct {
	Model   string `json:"model"`
	Choices []struct {
		Text  string `json:"text"`
		Delta struct {
			Content string `json:"content"`
		} `json:"delta"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
	} `json:"usage"`
	Error json.RawMessage `json:"error"`
	// Metrics is vLLM's per-request timing object (milliseconds), sent
	// with --enable-per-request-metrics; vLLM's client ignores it, the
	// ledger keeps it beside the client's view.
	Metrics *struct {
		QueueTimeMS *float64 `json:"queue_time_ms"`
		TTFTMS      *float64 `json:"time_to_first_token_ms"`
	} `json:"metrics"`
}

// timing is one request's measurement with vllm bench serve's definitions.
type timing struct {
	chat  bool
	start time.Time

	first, last  time.Time // first choice message, latest counted message
	got          bool
	itls         []time.Duration
	choiceMsgs   int
	hasUsage     bool
	promptTokens int
	outputTokens int
	finish       string
	model        string
	text         strings.Builder
	server       *probe.ServerTiming
}

// splitMessages is a bufio.SplitFunc that yields the messages of an event
// stream separated by blank lines, as vLLM's client splits on "\n\n".
func splitMessages(data []byte, atEOF bool) (int, []byte, error) {
	if i := bytes.Index(data, []byte("\n\n")); i >= 0 {
		return i + 2, data[:i], nil
	}
	if atEOF && len(bytes.TrimSpace(data)) > 0 {
		return len(data), data, errNoDone
	}
	if atEOF {
		return len(data), nil, errNoDone
	}
	return 0, nil, nil
}

// read consumes the stream until [DONE] and applies every message at the
// time it is parsed, as vLLM stamps them with perf_counter.
func (m *timing) read(body io.Reader, now func() time.Time) error {
	sc := bufio.NewScanner(body)
	sc.Buffer(make([]byte, 0, 32<<10), maxMessage)
	sc.Split(splitMessages)
	for sc.Scan() {
		msg := bytes.TrimSpace(sc.Bytes())
		if len(msg) == 0 || msg[0] == ':' {
			continue
		}
		data := bytes.TrimPrefix(msg, []byte("data:"))
		data = bytes.TrimSpace(data)
		if string(data) == "[DONE]" {
			return nil
		}
		var c benchChunk
		if err := json.Unmarshal(data, &c); err != nil {
			return fmt.Errorf("%w: %w", errMalformed, err)
		}
		if len(c.Error) > 0 && string(c.Error) != "null" {
			return fmt.Errorf("%w: %.200s", errStreamError, c.Error)
		}
		m.observe(&c, now())
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return fmt.Errorf("%w: message longer than %d bytes", errMalformed, maxMessage)
		}
		return err
	}
	return errNoDone
}

// observe applies one chunk that was parsed at at.
func (m *timing) observe(c *benchChunk, at time.Time) {
	if m.model == "" {
		m.model = c.Model
	}
	if c.Usage != nil {
		m.hasUsage = true
		m.promptTokens = c.Usage.PromptTokens
		m.outputTokens = c.Usage.CompletionTokens
	}
	if c.Metrics != nil && (c.Metrics.QueueTimeMS != nil || c.Metrics.TTFTMS != nil) {
		m.server = &probe.ServerTiming{QueueTime: msPtr(c.Metrics.QueueTimeMS), TTFT: msPtr(c.Metrics.TTFTMS)}
	}
	if len(c.Choices) == 0 {
		if m.chat {
			m.last = at // vLLM's chat client times the usage chunk too
		}
		return
	}
	ch := &c.Choices[0]
	if ch.FinishReason != nil && *ch.FinishReason != "" {
		m.finish = *ch.FinishReason
	}
	m.text.WriteString(ch.Text)
	m.text.WriteString(ch.Delta.Content)
	if !m.got {
		m.first, m.got = at, true
	} else {
		m.itls = append(m.itls, at.Sub(m.last))
	}
	m.last = at
	m.choiceMsgs++
}

// fill writes the measurement into res.
func (m *timing) fill(res *probe.Result) {
	res.Model, res.FinishReason, res.Text = m.model, m.finish, m.text.String()
	res.Chunks = m.choiceMsgs
	res.ITLs = m.itls
	res.Server = m.server
	if m.got {
		res.TTFT = m.first.Sub(m.start)
		res.E2EL = m.last.Sub(m.start)
	}
	res.UsageFromServer = m.hasUsage
	res.PromptTokens, res.OutputTokens = m.promptTokens, m.outputTokens
	if !m.hasUsage {
		res.OutputTokens = m.choiceMsgs
		res.Flags = append(res.Flags, probe.FlagNoUsage)
	}
	if res.OutputTokens > 1 && m.got {
		res.TPOT = (res.E2EL - res.TTFT) / time.Duration(res.OutputTokens-1)
	}
}

// streamFailure classifies an error that ended the stream early.
func streamFailure(res *probe.Result, err error) {
	res.Disposition = probe.ServerFailure
	switch {
	case errors.Is(err, errStreamError):
		res.Reason = probe.ReasonStreamError
	case errors.Is(err, errMalformed):
		res.Reason = probe.ReasonProtocol
	case errors.Is(err, errNoDone):
		res.Reason = probe.ReasonNoDone
	default:
		res.Reason = probe.ReasonDisconnect
	}
	res.Error = err.Error()
}

// msPtr converts optional milliseconds, 0 when absent or not a sane value.
func msPtr(v *float64) time.Duration {
	if v == nil || !(*v >= 0 && *v < 1e12) {
		return 0
	}
	return time.Duration(*v * float64(time.Millisecond))
}
