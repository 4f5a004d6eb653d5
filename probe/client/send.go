package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"mime"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"time"

	"github.com/vllm-prober/vllm-prober/config"
	"github.com/vllm-prober/vllm-prober/internal/rawread"
	"github.com/vllm-prober/vllm-prober/probe"
	"github.com/vllm-prober/vllm-prober/probe/stream"
	"github.com/vllm-prober/vllm-prober/probe/workload"
)

// maxErrorBody bounds how much of a non-200 body is read for its message.
const maxErrorBody = 64 << 10

// maxDrain bounds what is read after [DONE] so the connection can be
// reused.
const maxDrain = 64 << 10

// send writes the prepared request, reads the stream and records the
// measurement and any failure in res (the judge runs afterwards).
func (r *Requester) send(ctx context.Context, res *probe.Result, p *Prepared) {
	model, item, body := p.model, p.item, p.body
	if p.err != nil {
		res.Disposition, res.Reason = probe.ServerFailure, probe.ReasonProtocol
		res.Error = truncate(p.err.Error(), maxErrorLen)
		return
	}
	tr := &phaseTrace{now: r.opts.Now}
	req, err := http.NewRequestWithContext(httptrace.WithClientTrace(ctx, tr.clientTrace()),
		http.MethodPost, r.url, bytes.NewReader(body))
	if err != nil {
		res.Disposition, res.Reason = probe.ServerFailure, probe.ReasonConnect
		res.Error = truncate(unwrapURLError(err).Error(), maxErrorLen)
		return
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", r.acceptHeader())
	req.Header.Set("X-Request-Id", res.RequestID)

	m := &measurement{start: r.opts.Now(), timing: r.opts.Timing, fp: r.newHasher()}
	resp, err := r.client.Do(req)
	m.clock = r.arrivalClock(tr, m.start, resp)
	m.start = m.clock.sentAt(m.start)
	res.Sent = m.start
	if !res.Scheduled.IsZero() {
		res.Lag = res.Sent.Sub(res.Scheduled)
	}
	m.headers = m.clock.stamp()
	tr.fill(res, m.headers, err == nil)
	if err != nil {
		classifyTransportError(ctx, res, err, tr)
		return
	}
	defer resp.Body.Close()
	res.HTTPStatus = resp.StatusCode
	if resp.StatusCode != http.StatusOK {
		r.httpError(ctx, res, resp, model)
		return
	}
	if r.probe.API == config.APIEmbeddings {
		r.readEmbedding(ctx, res, resp, m, item)
		return
	}
	if !hasContentType(res, resp, "text/event-stream") {
		return
	}
	r.readStream(ctx, res, resp.Body, m, item)
}

// arrivalClock returns the clock that stamps resp, the response (nil:
// none) of the request traced by tr, handed to the HTTP client at start:
// receive times of its connection when the Requester runs on the real
// clock (Options.Now nil), never before the request was written. On a
// reused HTTP/1 connection, which carries one request at a time, so that
// its first write after the response before it is this request's, its
// began is the time immediately before the request's first byte was
// written (rawread.Stamps.Began, after the WroteRequest trace, which fires
// once the request is buffered), when that lies after start; a dialed
// connection keeps start, so that its connect counts, and so does HTTP/2,
// whose connection interleaves requests. It is called once the response
// headers came, so a began of this request is not later than the clock's
// now.
func (r *Requester) arrivalClock(tr *phaseTrace, start time.Time, resp *http.Response) *arrivalClock {
	conn, reused, wrote := tr.sent()
	c := &arrivalClock{now: r.opts.Now, floor: start}
	if r.arrivals && conn != nil {
		c.conn, _ = rawread.StampsOf(conn)
	}
	if wrote.After(start) {
		c.floor = wrote
		http1 := resp != nil && resp.ProtoMajor == 1
		if b, ok := c.conn.Began(); ok && reused && http1 && b.After(start) && !b.After(c.now()) {
			c.began = b
			if b.After(c.floor) {
				c.floor = b
			}
		}
	}
	return c
}

// hasContentType reports whether resp's media type is want, and records a
// protocol failure in res when it is not.
func hasContentType(res *probe.Result, resp *http.Response, want string) bool {
	if ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); ct == want {
		return true
	}
	res.Disposition, res.Reason = probe.ServerFailure, probe.ReasonProtocol
	res.Error = truncate(fmt.Sprintf("unexpected content type %q", resp.Header.Get("Content-Type")), maxErrorLen)
	return false
}

// requestBody renders the JSON body. request.extra is merged in; it may
// override sampling fields but never the ones the measurement relies on.
func (r *Requester) requestBody(model string, it workload.Item) ([]byte, error) {
	if r.probe.API == config.APIEmbeddings {
		return r.embeddingBody(model, it)
	}
	var out []byte
	var err error
	if b := r.bodyFields(model, it); len(r.probe.Request.Extra) == 0 {
		out, err = json.Marshal(b)
	} else {
		out, err = json.Marshal(b.withExtra(r.probe.Request.Extra))
	}
	if err != nil {
		return nil, fmt.Errorf("encode request body: %w", err)
	}
	return out, nil
}

// bodyFields is a completions or chat request body without
// request.extra. Its fields are in the order json.Marshal writes a map's
// keys (sorted), so it encodes to the bytes withExtra's map of the same
// fields does; a struct encodes without boxing each value and sorting the
// keys (BenchmarkRequestBodyEncode). A nil pointer is a field not sent.
type bodyFields struct {
	IgnoreEOS           bool            `json:"ignore_eos,omitempty"`
	MaxCompletionTokens *int            `json:"max_completion_tokens,omitempty"`
	MaxTokens           *int            `json:"max_tokens,omitempty"`
	Messages            *any            `json:"messages,omitempty"`
	Model               string          `json:"model"`
	Prompt              *any            `json:"prompt,omitempty"`
	RepetitionPenalty   *float64        `json:"repetition_penalty,omitempty"`
	Seed                *int64          `json:"seed,omitempty"`
	Stream              bool            `json:"stream"`
	StreamOptions       map[string]bool `json:"stream_options"`
	Temperature         *float64        `json:"temperature,omitempty"`
}

// The stream_options the prober sends, the ones vllm bench serve does and
// the repetition_penalty it sends with completions; read only.
var (
	probeStreamOptions    = map[string]bool{"include_usage": true, "continuous_usage_stats": true}
	vllmStreamOptions     = map[string]bool{"include_usage": true}
	vllmRepetitionPenalty = 1.0
)

// bodyFields returns the body of item it for model.
func (r *Requester) bodyFields(model string, it workload.Item) bodyFields {
	vllm := r.opts.Timing == TimingVLLMBench
	b := bodyFields{IgnoreEOS: r.probe.Request.IgnoreEOS, Model: model, Seed: it.Seed, Stream: true, StreamOptions: probeStreamOptions}
	if !vllm {
		b.Temperature = &r.probe.Request.Temperature
	} else {
		b.StreamOptions = vllmStreamOptions
		if r.probe.API != config.APIChat {
			b.RepetitionPenalty = &vllmRepetitionPenalty
		}
	}
	// Copies, not &it.MaxTokens or &it.Prompt: those move all of it to the heap.
	maxTokens := it.MaxTokens
	if r.probe.API == config.APIChat {
		var messages any = it.Messages
		if vllm {
			messages = vllmMessages(it.Messages)
		}
		// vLLM honours max_completion_tokens; max_tokens is deprecated.
		b.MaxCompletionTokens, b.Messages = &maxTokens, &messages
	} else {
		prompt := it.Prompt
		b.MaxTokens, b.Prompt = &maxTokens, &prompt
	}
	return b
}

// withExtra returns b as a map with extra merged in: extra may override
// sampling fields, never model, the content, stream or stream_options.
func (b bodyFields) withExtra(extra map[string]any) map[string]any {
	m := make(map[string]any, 8+len(extra))
	if b.IgnoreEOS {
		m["ignore_eos"] = true
	}
	if b.MaxCompletionTokens != nil {
		m["max_completion_tokens"] = *b.MaxCompletionTokens
	}
	if b.MaxTokens != nil {
		m["max_tokens"] = *b.MaxTokens
	}
	if b.RepetitionPenalty != nil {
		m["repetition_penalty"] = *b.RepetitionPenalty
	}
	if b.Seed != nil {
		m["seed"] = *b.Seed
	}
	if b.Temperature != nil {
		m["temperature"] = *b.Temperature
	}
	maps.Copy(m, extra)
	m["model"] = b.Model
	m["stream"] = b.Stream
	m["stream_options"] = b.StreamOptions
	if b.Messages != nil {
		m["messages"] = *b.Messages
	}
	if b.Prompt != nil {
		m["prompt"] = *b.Prompt
	}
	return m
}

// httpError records a non-200 answer with the server's error message.
func (r *Requester) httpError(ctx context.Context, res *probe.Result, resp *http.Response, model string) {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, min(maxErrorBody, r.opts.MaxBodyBytes)))
	res.Disposition = probe.ServerFailure
	switch code := resp.StatusCode; {
	case code == http.StatusTooManyRequests:
		res.Reason = probe.ReasonHTTP429
	case code >= 400 && code < 500:
		res.Reason = probe.ReasonHTTP4xx
	case code >= 500:
		res.Reason = probe.ReasonHTTP5xx
	case code >= 300 && code < 400:
		res.Reason = probe.ReasonRedirect
	default:
		res.Reason = probe.ReasonProtocol
	}
	msg := bodyErrorMessage(b)
	if msg == "" {
		msg = http.StatusText(resp.StatusCode)
	}
	res.Error = truncate(fmt.Sprintf("http %d: %s", resp.StatusCode, msg), maxErrorLen)
	if resp.StatusCode == http.StatusNotFound {
		// The server may have been restarted with another model.
		r.models.forget(model)
	}
}

// readStream parses the event stream into the measurement and res.
func (r *Requester) readStream(ctx context.Context, res *probe.Result, body io.Reader, m *measurement, item workload.Item) {
	lb := &limitedBody{r: body, n: r.opts.MaxBodyBytes}
	sr := stream.NewReader(lb, r.opts.MaxLineBytes, m.clock.stamp)
	defer sr.Close()
	var c stream.Chunk
	done := false
	for !done {
		ev, err := sr.Next()
		if err != nil {
			classifyStreamError(ctx, res, err)
			break
		}
		if ev.Done {
			done = true
			break
		}
		if len(bytes.TrimSpace(ev.Data)) == 0 {
			continue
		}
		if err := c.Decode(ev.Data); err != nil {
			res.Disposition, res.Reason = probe.ServerFailure, probe.ReasonProtocol
			res.Error = truncate(err.Error(), maxErrorLen)
			break
		}
		if c.HasError() {
			res.Disposition, res.Reason = probe.ServerFailure, probe.ReasonStreamError
			res.Error = errorMessage(c.Error)
			break
		}
		if err := m.observe(&c, ev.At); err != nil {
			res.Disposition, res.Reason = probe.ServerFailure, probe.ReasonProtocol
			res.Error = truncate(err.Error(), maxErrorLen)
			break
		}
	}
	m.fill(res, done, item.PromptTokens)
	m.failNoChoices(res, done)
	m.setFingerprint(res, done, item)
	if done {
		_, _ = io.CopyN(io.Discard, lb, maxDrain)
	}
}

// classifyStreamError records why reading the body failed.
func classifyStreamError(ctx context.Context, res *probe.Result, err error) {
	if endedByContext(ctx, res) {
		return
	}
	res.Disposition = probe.ServerFailure
	switch {
	case errors.Is(err, stream.ErrLineTooLong), errors.Is(err, errBodyTooLong), errors.Is(err, io.ErrNoProgress):
		res.Reason = probe.ReasonProtocol
	case errors.Is(err, io.EOF):
		res.Reason = probe.ReasonNoDone
		err = errors.New("stream ended without [DONE]")
	default:
		res.Reason = probe.ReasonDisconnect
	}
	res.Error = truncate(err.Error(), maxErrorLen)
}

// unwrapURLError drops the *url.Error wrapper, whose text repeats the URL.
func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// defaultMaxBodyBytes is the default bound of one response body.
const defaultMaxBodyBytes = 16 << 20

// errBodyTooLong makes a response malformed: its body is longer than the
// bound.
var errBodyTooLong = errors.New("response body longer than the limit")

// limitedBody bounds a response body: reading past max bytes fails with
// errBodyTooLong rather than truncating silently.
type limitedBody struct {
	r io.Reader
	n int64 // bytes left
}

func (l *limitedBody) Read(p []byte) (int, error) {
	if l.n <= 0 {
		// One more byte tells a body of exactly max bytes from a longer one.
		var one [1]byte
		n, err := l.r.Read(one[:])
		if n > 0 {
			return 0, errBodyTooLong
		}
		return 0, err
	}
	if int64(len(p)) > l.n {
		p = p[:l.n]
	}
	n, err := l.r.Read(p)
	l.n -= int64(n)
	return n, err
}
