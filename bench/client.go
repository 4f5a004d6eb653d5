package bench

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/vllm-prober/vllm-prober/config"
	"github.com/vllm-prober/vllm-prober/probe"
)

// Sender sends one offered request and fills its Result, disposition
// included. *probe.Requester and *Client satisfy it.
type Sender interface {
	Do(ctx context.Context, res *probe.Result)
	Close()
}

// ClientOptions configures a Client.
type ClientOptions struct {
	URL       string // the endpoint requests are posted to
	Chat      bool   // chat completions payload and timing rules
	Model     string
	APIKey    string
	IgnoreEOS bool
	Prompts   []Prompt // request Seq n sends Prompts[(n-1) % len]
	// RequestIDPrefix prefixes X-Request-Id, followed by Seq-1 as vLLM
	// numbers its requests.
	RequestIDPrefix string
	Timeout         time.Duration
	// Probe is what the judge applies: its SLO (from --goodput) and
	// quality checks decide the disposition of a completed stream.
	Probe      config.Probe
	HTTPClient *http.Client     // nil = a client without a global timeout
	Now        func() time.Time // nil = time.Now
}

// Client sends requests exactly as vllm bench serve does and measures them
// with its definitions: TTFT at the first SSE message with a non-empty
// choices list (for chat, vLLM's role chunk counts), one ITL sample per
// later choice message, latency at the last choice message (chat: the last
// message of any kind, the usage chunk included). Dispositions, the judge
// and the ledger are the probe package's.
type Client struct {
	o ClientOptions
}

// errRequestTimeout is the cause of a request context that hit --timeout.
var errRequestTimeout = errors.New("request timeout")

// NewClient returns a Client; it fails when there is nothing to send.
func NewClient(o ClientOptions) (*Client, error) {
	if len(o.Prompts) == 0 {
		return nil, errors.New("new bench client: no prompts")
	}
	if o.HTTPClient == nil {
		o.HTTPClient = &http.Client{Transport: &http.Transport{
			Proxy: http.ProxyFromEnvironment, MaxIdleConnsPerHost: 1024, IdleConnTimeout: 90 * time.Second,
		}}
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Timeout <= 0 {
		o.Timeout = 6 * time.Hour // aiohttp's default total timeout in vLLM's client
	}
	return &Client{o: o}, nil
}

// Close closes idle connections.
func (c *Client) Close() { c.o.HTTPClient.CloseIdleConnections() }

// Do sends request res.Seq and fills res; see Sender.
func (c *Client) Do(ctx context.Context, res *probe.Result) {
	p := c.o.Prompts[int((res.Seq+uint64(len(c.o.Prompts))-1)%uint64(len(c.o.Prompts)))]
	if res.RequestID == "" {
		res.RequestID = c.o.RequestIDPrefix + strconv.FormatUint(res.Seq-1, 10)
	}
	ctx, cancel := context.WithTimeoutCause(ctx, c.o.Timeout, errRequestTimeout)
	defer cancel()
	if !c.send(ctx, res, p) && res.Disposition == "" {
		failContext(ctx, res)
	}
	probe.Judge(c.o.Probe, nil, res)
}

// body renders the JSON payload vllm bench serve sends.
func (c *Client) body(p Prompt) ([]byte, error) {
	b := map[string]any{
		"model":          c.o.Model,
		"stream":         true,
		"stream_options": map[string]bool{"include_usage": true},
	}
	if c.o.IgnoreEOS {
		b["ignore_eos"] = true
	}
	if c.o.Chat {
		b["max_completion_tokens"] = p.OutputLen
		if len(p.Messages) > 0 {
			b["messages"] = p.Messages
		} else {
			b["messages"] = []any{map[string]any{"role": "user",
				"content": []any{map[string]string{"type": "text", "text": p.Text}}}}
		}
	} else {
		b["max_tokens"] = p.OutputLen
		b["repetition_penalty"] = 1.0
		b["prompt"] = p.Text
		if p.TokenIDs != nil {
			b["prompt"] = p.TokenIDs
		}
	}
	out, err := json.Marshal(b)
	if err != nil {
		return nil, fmt.Errorf("encode request body: %w", err)
	}
	return out, nil
}

// send performs the request; it returns false when it stopped because ctx
// ended (and set no disposition for it).
func (c *Client) send(ctx context.Context, res *probe.Result, p Prompt) bool {
	body, err := c.body(p)
	if err != nil {
		res.Disposition, res.Reason, res.Error = probe.ServerFailure, probe.ReasonProtocol, err.Error()
		return true
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.o.URL, bytes.NewReader(body))
	if err != nil {
		res.Disposition, res.Reason, res.Error = probe.ServerFailure, probe.ReasonConnect, err.Error()
		return true
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Request-Id", res.RequestID)
	if c.o.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+c.o.APIKey)
	}
	m := &timing{chat: c.o.Chat, start: c.o.Now()}
	res.Sent = m.start
	if !res.Scheduled.IsZero() {
		res.Lag = res.Sent.Sub(res.Scheduled)
	}
	resp, err := c.o.HTTPClient.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return false
		}
		transportFailure(res, err)
		return true
	}
	defer resp.Body.Close()
	res.HTTPStatus = resp.StatusCode
	if resp.StatusCode != http.StatusOK {
		httpFailure(res, resp)
		return true
	}
	err = m.read(resp.Body, c.o.Now)
	m.fill(res)
	switch {
	case err != nil && ctx.Err() != nil:
		return false
	case err != nil:
		streamFailure(res, err)
	case !m.got:
		// vLLM's client fails a stream without any choice message too.
		res.Disposition, res.Reason, res.Error = probe.ServerFailure, probe.ReasonProtocol, errNoChoices.Error()
	}
	return true
}

// failContext sets the disposition of a request whose context ended: its
// own timeout is client_timeout, anything else (the run ending) cancelled.
func failContext(ctx context.Context, res *probe.Result) {
	if errors.Is(context.Cause(ctx), errRequestTimeout) {
		res.Disposition, res.Reason = probe.ClientTimeout, probe.ReasonTimeout
	} else {
		res.Disposition, res.Reason = probe.Cancelled, probe.ReasonShutdown
	}
	res.Error = context.Cause(ctx).Error()
}

// transportFailure classifies an error before any response.
func transportFailure(res *probe.Result, err error) {
	res.Disposition, res.Reason = probe.ServerFailure, probe.ReasonConnect
	var dnsErr *net.DNSError
	var recErr tls.RecordHeaderError
	var certErr *tls.CertificateVerificationError
	switch {
	case errors.As(err, &dnsErr):
		res.Reason = probe.ReasonDNS
	case errors.As(err, &recErr), errors.As(err, &certErr):
		res.Reason = probe.ReasonTLS
	}
	res.Error = err.Error()
}

// httpFailure records a non-200 status with the start of its body.
func httpFailure(res *probe.Result, resp *http.Response) {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	res.Disposition = probe.ServerFailure
	switch code := resp.StatusCode; {
	case code == http.StatusTooManyRequests:
		res.Reason = probe.ReasonHTTP429
	case code >= 400 && code < 500:
		res.Reason = probe.ReasonHTTP4xx
	case code >= 500:
		res.Reason = probe.ReasonHTTP5xx
	default:
		res.Reason = probe.ReasonProtocol
	}
	res.Error = fmt.Sprintf("http %d: %s", resp.StatusCode, bytes.TrimSpace(b))
}
