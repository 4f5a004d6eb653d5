// Package client sends one probe request and measures it: it builds the
// completions or chat body, streams the response, times TTFT, ITL, TPOT and
// E2EL on the client side, and judges the answer into one Result
// (docs/design.md, "Measurement (client side)"). An embeddings request is
// one JSON answer, timed by its E2EL (embeddings.go).
package client

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/vllm-prober/vllm-prober/config"
	"github.com/vllm-prober/vllm-prober/probe"
	"github.com/vllm-prober/vllm-prober/probe/judge"
	"github.com/vllm-prober/vllm-prober/probe/stream"
	"github.com/vllm-prober/vllm-prober/probe/workload"
)

// DefaultUserAgent is sent when Options.UserAgent is empty.
const DefaultUserAgent = "vllm-prober"

// Options tunes a Requester; the zero value is usable.
type Options struct {
	Logger *slog.Logger
	// MaxBodyBytes bounds one response body; 0 = defaultMaxBodyBytes.
	// Past it the request ends server_failure/protocol.
	MaxBodyBytes int64
	// MaxLineBytes bounds one SSE line (and one event's data); 0 =
	// DefaultMaxLineBytes. Past it: server_failure/protocol.
	MaxLineBytes int
	UserAgent    string
	// Now is the clock; nil = time.Now. Its monotonic readings are what
	// is measured. On time.Now (nil), response bytes are stamped with
	// when the kernel received them where it says (arrivalClock); another
	// clock stamps them when they are read.
	Now func() time.Time
	// Timing selects the measurement definitions and payload; the zero
	// value is the prober's own (TimingProbe).
	Timing Timing
	// Endpoint is the path requests are posted to, appended to the
	// target URL; "" = /v1/completions, /v1/chat/completions or
	// /v1/embeddings by the probe's API.
	Endpoint string
	// Items, when not empty, replaces the probe's workload: request Seq
	// n sends Items[(n-1) mod len(Items)].
	Items []workload.Item
	// ByIndex makes request Seq n send the workload's item n
	// (workload.Source.ItemAt) rather than its next one, so workers that
	// each send a share of one schedule send the prompts one process would.
	ByIndex bool
	// Clients, when set, shares one HTTP client among the Requesters of
	// a target (Pool); nil = the Requester builds its own.
	Clients *Pool
}

// Requester sends, times, parses and judges the requests of one (target,
// probe) pair. It is safe for concurrent use.
type Requester struct {
	target  config.Target
	probe   config.Probe // Quality.Model defaults to the target's model
	opts    Options
	client  *http.Client
	release func() // gives client back: Close
	url     string // the endpoint requests are posted to
	base    string // the target URL without a trailing slash
	timeout time.Duration
	models  *modelSource
	work    workload.Source // nil when Options.Items replaces it
	// warm is set once a request has drawn its item: the model is known
	// and the workload calibrated, so Prepare needs no round trip.
	warm atomic.Bool
	// arrivals: stamp response bytes with the kernel's receive times
	// (arrivalClock); only on the real clock, which they are read against.
	arrivals bool
}

// errProbeTimeout is the cause of a request context that hit the probe's
// own timeout.
var errProbeTimeout = errors.New("probe timeout")

// New prepares the requests of probe p against target t: it builds
// the HTTP client from t.HTTPClientConfig, loads the workload (dataset
// errors name file and line) and compiles the JSON schema of the quality
// checks.
func New(t config.Target, p config.Probe, o Options) (*Requester, error) {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	o.Logger = o.Logger.With("target", t.Name, "probe", p.Name)
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = defaultMaxBodyBytes
	}
	if o.MaxLineBytes <= 0 {
		o.MaxLineBytes = stream.DefaultMaxLineBytes
	}
	if o.UserAgent == "" {
		o.UserAgent = DefaultUserAgent
	}
	arrivals := o.Now == nil
	if arrivals {
		o.Now = time.Now
	}
	client, release, err := httpClientOf(t, o)
	if err != nil {
		return nil, fmt.Errorf("http client of target %q: %w", t.Name, err)
	}
	r := &Requester{target: t, probe: p, opts: o, client: client, release: release, timeout: time.Duration(p.Timeout),
		arrivals: arrivals}
	if r.timeout <= 0 {
		r.timeout = time.Duration(config.DefaultProbe.Timeout)
	}
	if r.probe.Quality.Model == "" {
		r.probe.Quality.Model = t.Model
	}
	r.base = strings.TrimRight(t.URL, "/")
	r.url = r.base + "/v1/completions"
	switch p.API {
	case config.APIChat:
		r.url = r.base + "/v1/chat/completions"
	case config.APIEmbeddings:
		r.url = r.base + embeddingsPath
	}
	if o.Endpoint != "" {
		r.url = r.base + "/" + strings.TrimLeft(o.Endpoint, "/")
	}
	r.models = &modelSource{fixed: t.Model, client: client, base: r.base, logger: o.Logger}
	if p.Quality.JSONSchema != "" && p.Quality.Schema == nil {
		if r.probe.Quality.Schema, err = judge.CompileSchema(p.Quality.JSONSchema); err != nil {
			release()
			return nil, fmt.Errorf("probe %q: %w", p.Name, err)
		}
	}
	if tc := p.Quality.ToolCall; tc != nil && tc.ArgumentsSchema != "" && tc.Schema == nil {
		c := *tc // the config's check is shared; compile into a copy
		if c.Schema, err = judge.CompileSchema(c.ArgumentsSchema); err != nil {
			release()
			return nil, fmt.Errorf("probe %q tool_call: %w", p.Name, err)
		}
		r.probe.Quality.ToolCall = &c
	}
	if len(o.Items) == 0 {
		r.work, err = workload.New(p, r.countTokens)
	}
	if err != nil {
		release()
		return nil, fmt.Errorf("probe %q workload: %w", p.Name, err)
	}
	return r, nil
}

// countTokens asks the target's tokenizer, for chat prompt calibration.
func (r *Requester) countTokens(ctx context.Context, model, text string) (int, error) {
	n, err := countTokens(ctx, r.client, r.base, model, text)
	if err != nil {
		r.opts.Logger.Info("tokenizer unavailable, estimating one token per word", "err", err)
	}
	return n, err
}

// Model returns the model requests name: the target's, or the first id of
// the target's GET /v1/models, discovered on first use.
func (r *Requester) Model(ctx context.Context) (string, error) {
	return r.models.get(ctx)
}

// ReceiveTimes reports whether the Requester stamps response bytes with
// their kernel receive times where the connection has them (it runs on
// the real clock: Options.Now was nil).
func (r *Requester) ReceiveTimes() bool { return r.arrivals }

// Close closes idle connections (of a shared client: when its last
// Requester closes).
func (r *Requester) Close() {
	r.release()
}

// httpClientOf returns the HTTP client of a Requester of target t, from
// o.Clients when set, and the function that gives it back.
func httpClientOf(t config.Target, o Options) (*http.Client, func(), error) {
	if o.Clients != nil {
		return o.Clients.get(t, o.UserAgent)
	}
	c, err := newHTTPClient(t, o.UserAgent, 0)
	if err != nil {
		return nil, nil, err
	}
	return c, c.CloseIdleConnections, nil
}

// Do sends one request and fills res. The caller sets res.Seq, Target,
// Probe and Scheduled; Do fills everything else: RequestID (when empty),
// Sent, Lag, the measurement and the judged disposition. When ctx ends with
// cause ErrShutdown or ErrRemoved the request is cancelled with reason
// shutdown or removed; the probe's timeout gives client_timeout/timeout.
// It never blocks past the probe timeout.
func (r *Requester) Do(ctx context.Context, res *probe.Result) {
	r.DoPrepared(ctx, res, nil)
}

// Prepared is a request drawn and encoded ahead of its send (Prepare).
type Prepared struct {
	seq   uint64
	model string
	item  workload.Item
	body  []byte
	err   error // encoding the body failed
}

// Prepare draws and encodes request seq now, what Do would do after its
// planned time, so that DoPrepared has only to stamp and write it. It
// returns nil, and Do does the work, while that would need a round trip
// to the target: before a request has learnt the model and calibrated the
// workload, or after the model was forgotten. The workload's next item is
// drawn now, so a caller that prepares must send what it prepared, in
// order (a Prepared of a workload item that does not depend on seq fits
// any later request of the Requester). A panic prepares nothing: Do then
// draws the request, and the panic ends it rather than the caller.
func (r *Requester) Prepare(seq uint64) (p *Prepared) {
	defer func() {
		if v := recover(); v != nil {
			r.opts.Logger.Error("preparing a request failed unexpectedly", "err", fmt.Sprint(v))
			p = nil
		}
	}()
	if !r.warm.Load() {
		return nil
	}
	model, ok := r.models.known()
	if !ok {
		return nil
	}
	// Warm: neither the model nor the workload asks the target, so no
	// context can end this.
	item := r.nextItem(context.Background(), model, seq)
	body, err := r.requestBody(model, item)
	return &Prepared{seq: seq, model: model, item: item, body: body, err: err}
}

// fits reports whether p may be sent as request seq: it was prepared for
// seq, or its item is the workload's next one whatever the seq.
func (r *Requester) fits(p *Prepared, seq uint64) bool {
	return p != nil && (p.seq == seq || (len(r.opts.Items) == 0 && !r.opts.ByIndex))
}

// DoPrepared is Do for a request prepared by Prepare (nil, or one that
// does not fit res.Seq: Do's own drawing and encoding).
func (r *Requester) DoPrepared(ctx context.Context, res *probe.Result, p *Prepared) {
	defer func() {
		if v := recover(); v != nil {
			r.opts.Logger.Error("request failed unexpectedly", "err", fmt.Sprint(v))
			res.Disposition, res.Reason, res.Error = probe.ServerFailure, probe.ReasonProtocol, "internal error handling the response"
		}
	}()
	if res.RequestID == "" {
		res.RequestID = r.requestID(res.Seq)
	}
	res.Embeddings = r.probe.API == config.APIEmbeddings
	began := r.opts.Now()
	ctx, cancel := context.WithTimeoutCause(ctx, r.timeout, errProbeTimeout)
	defer cancel()
	if !r.fits(p, res.Seq) {
		p = r.prepareNow(ctx, res)
	}
	var item workload.Item
	if p != nil {
		item = p.item
		if !endedByContext(ctx, res) {
			r.send(ctx, res, p)
		}
	}
	switch {
	case !res.Sent.IsZero():
		res.Elapsed = r.opts.Now().Sub(res.Sent)
	case res.Disposition == probe.ClientTimeout:
		// It timed out before its send, waiting for the target to name
		// its model or calibrate the workload: the client waited all the
		// same, and timeouts are never dropped from latency views.
		res.Elapsed = r.opts.Now().Sub(began)
	}
	pr := r.probe
	if pr.Quality.Model == "" {
		// Expect the model the request named, discovered or configured:
		// a server answering as another model is a quality failure.
		pr.Quality.Model = p.modelOrEmpty()
	}
	judge.Request(pr, item.Expect, res)
	r.opts.Logger.Debug("request finished", "request_id", res.RequestID, "disposition", res.Disposition,
		"reason", res.Reason, "ttft", res.TTFT, "e2el", res.E2EL, "err", res.Error)
}

// prepareNow learns the model (discovering it when needed) and draws and
// encodes request res.Seq within the request's ctx; nil when discovery
// failed (recorded in res).
func (r *Requester) prepareNow(ctx context.Context, res *probe.Result) *Prepared {
	model, err := r.models.get(ctx)
	if err != nil {
		r.discoveryFailed(ctx, res, err)
		return nil
	}
	item := r.nextItem(ctx, model, res.Seq)
	if ctx.Err() == nil {
		r.warm.Store(true)
	}
	body, err := r.requestBody(model, item)
	return &Prepared{seq: res.Seq, model: model, item: item, body: body, err: err}
}

// modelOrEmpty is the model p names; "" for nil (discovery failed).
func (p *Prepared) modelOrEmpty() string {
	if p == nil {
		return ""
	}
	return p.model
}

// discoveryFailed records a request that could not learn the model. A
// target that does not answer at all fails as it would have on the
// request itself (connect, dns, tls); model_discovery is for a server
// that answered /v1/models without a usable model.
func (r *Requester) discoveryFailed(ctx context.Context, res *probe.Result, err error) {
	var te *transportError
	if errors.As(err, &te) {
		classifyTransportError(ctx, res, te.err, &phaseTrace{})
		return
	}
	if !endedByContext(ctx, res) {
		res.Disposition, res.Reason = probe.ServerFailure, probe.ReasonModelDiscovery
		res.Error = truncate(err.Error(), maxErrorLen)
	}
}

// nextItem returns what request seq sends: the caller's item for it, the
// workload's item seq (Options.ByIndex), or the workload's next item.
func (r *Requester) nextItem(ctx context.Context, model string, seq uint64) workload.Item {
	if n := uint64(len(r.opts.Items)); n > 0 {
		return r.opts.Items[(seq+n-1)%n]
	}
	if r.opts.ByIndex {
		return r.work.ItemAt(ctx, model, seq)
	}
	return r.work.Next(ctx, model)
}

// requestID makes the X-Request-Id of a request: readable, and unique
// across restarts thanks to the random suffix.
func (r *Requester) requestID(seq uint64) string {
	return probe.RequestID(r.target.Name, r.probe.Name, seq, rand.Uint32())
}

// endedByContext sets the cancelled or client_timeout disposition when ctx
// has ended, and reports whether it had.
func endedByContext(ctx context.Context, res *probe.Result) bool {
	if ctx.Err() == nil {
		return false
	}
	switch cause := context.Cause(ctx); {
	case errors.Is(cause, probe.ErrShutdown):
		res.Disposition, res.Reason = probe.Cancelled, probe.ReasonShutdown
	case errors.Is(cause, probe.ErrRemoved):
		res.Disposition, res.Reason = probe.Cancelled, probe.ReasonRemoved
	case errors.Is(cause, errProbeTimeout), errors.Is(cause, context.DeadlineExceeded):
		res.Disposition, res.Reason = probe.ClientTimeout, probe.ReasonTimeout
	default:
		res.Disposition, res.Reason = probe.Cancelled, probe.ReasonShutdown
	}
	res.Error = truncate(context.Cause(ctx).Error(), maxErrorLen)
	return true
}
