package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	dto "github.com/prometheus/client_model/go"
	promconfig "github.com/prometheus/common/config"
	"github.com/prometheus/common/expfmt"

	"github.com/vllm-prober/vllm-prober/config"
	"github.com/vllm-prober/vllm-prober/probe/client"
)

// acceptHeader asks for the classic text format. It deliberately does not
// list OpenMetrics: Python's prometheus_client (vLLM) answers OpenMetrics
// whenever the header names it, whatever its q-value, and expfmt's
// OpenMetrics parser is far slower. A server that answers OpenMetrics or
// protobuf anyway is still parsed, by its Content-Type.
const acceptHeader = "text/plain;version=0.0.4;q=0.9,*/*;q=0.1"

// maxInfoBytes bounds the /version body (client.FetchModel bounds
// /v1/models alike).
const maxInfoBytes = 1 << 20

// maxOpenMetricsBytes bounds an OpenMetrics body: expfmt's OpenMetrics
// parser costs milliseconds per line (an ABNF parse each), so a large body
// would burn seconds of CPU per scrape. Servers answer the text format we
// ask for; this only guards against one that insists on OpenMetrics.
const maxOpenMetricsBytes = 1 << 20

var errBodyTooLarge = errors.New("response body too large")

// run is one target's loop: scrape at once, then on every tick, until ctx
// ends. The HTTP client is built lazily so a missing credentials or TLS file
// is retried on the next tick.
func (s *ServerScraper) run(ctx context.Context, l *targetLoop) {
	tick, stopTicker := s.opts.NewTicker(l.cfg.interval)
	defer stopTicker()
	var client *http.Client
	defer func() {
		if client != nil {
			client.CloseIdleConnections()
		}
	}()
	for {
		res := scrapeResult{start: s.opts.Now()}
		if client == nil {
			c, err := config.NewHTTPClient(l.cfg.target.HTTPClientConfig, "vllm-prober",
				promconfig.WithUserAgent(s.opts.UserAgent))
			if err != nil {
				res.err = fmt.Errorf("build http client: %w", err)
			}
			client = c
		}
		if client != nil {
			s.scrapeOnce(ctx, client, l, &res)
		}
		res.end = s.opts.Now()
		if ctx.Err() != nil {
			return
		}
		s.publish(l, res)
		select {
		case <-ctx.Done():
			return
		case <-tick:
		}
	}
}

// scrapeOnce fetches /metrics (when configured), then the model and version.
func (s *ServerScraper) scrapeOnce(ctx context.Context, client *http.Client, l *targetLoop, res *scrapeResult) {
	cfg := l.cfg
	if cfg.target.MetricsPath != "" {
		res.families, res.err = s.fetchMetrics(ctx, client, l)
	}
	if cfg.target.Model == "" {
		res.model = s.fetchModel(ctx, client, cfg)
	}
	res.version = s.fetchVersion(ctx, client, cfg)
}

func joinURL(base, path string) string {
	return strings.TrimRight(base, "/") + "/" + strings.TrimLeft(path, "/")
}

// get performs one GET bounded by cfg.timeout and returns the body (at most
// limit bytes) and the response headers.
func (s *ServerScraper) get(ctx context.Context, client *http.Client, cfg loopConfig, path, accept string, limit int64) ([]byte, http.Header, error) {
	ctx, cancel := context.WithTimeout(ctx, cfg.timeout)
	defer cancel()
	url := joinURL(cfg.target.URL, path)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, nil, fmt.Errorf("build request for %s: %w", path, err)
	}
	req.Header.Set("Accept", accept)
	req.Header.Set("X-Prometheus-Scrape-Timeout-Seconds", strconv.FormatFloat(cfg.timeout.Seconds(), 'f', -1, 64))
	resp, err := client.Do(req)
	if err != nil {
		return nil, nil, fmt.Errorf("get %s: %w", path, err)
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
		return nil, nil, fmt.Errorf("get %s: server returned HTTP status %s", path, resp.Status)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return nil, nil, fmt.Errorf("read %s: %w", path, err)
	}
	if int64(len(body)) > limit {
		return nil, nil, fmt.Errorf("read %s: %w (limit %d bytes)", path, errBodyTooLarge, limit)
	}
	return body, resp.Header, nil
}

func (s *ServerScraper) fetchMetrics(ctx context.Context, client *http.Client, l *targetLoop) ([]*dto.MetricFamily, error) {
	cfg := l.cfg
	body, header, err := s.get(ctx, client, cfg, cfg.target.MetricsPath, acceptHeader, s.opts.MaxBodyBytes)
	if err != nil {
		return nil, err
	}
	format := expfmt.ResponseFormat(header)
	switch format.FormatType() {
	case expfmt.TypeUnknown:
		format = expfmt.NewFormat(expfmt.TypeTextPlain)
	case expfmt.TypeOpenMetrics:
		return decodeOpenMetrics(ctx, body, format, &l.parsing, cfg.timeout)
	}
	return decodeFamilies(bytes.NewReader(body), format)
}

// decodeOpenMetrics parses an OpenMetrics body within the scrape timeout.
// The parse cannot be interrupted, so it runs in its own goroutine; busy
// allows at most one such parse per target, bounding the CPU a slow body
// can take after its scrape gave up.
func decodeOpenMetrics(ctx context.Context, body []byte, format expfmt.Format, busy *atomic.Bool, timeout time.Duration) ([]*dto.MetricFamily, error) {
	if len(body) > maxOpenMetricsBytes {
		return nil, fmt.Errorf("parse metrics: openmetrics body of %d bytes is over the %d byte limit for that format", len(body), maxOpenMetricsBytes)
	}
	if !busy.CompareAndSwap(false, true) {
		return nil, errors.New("parse metrics: the previous openmetrics parse is still running")
	}
	type result struct {
		mfs []*dto.MetricFamily
		err error
	}
	done := make(chan result, 1)
	go func() {
		defer busy.Store(false)
		mfs, err := decodeFamilies(bytes.NewReader(body), format)
		done <- result{mfs, err}
	}()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	select {
	case r := <-done:
		return r.mfs, r.err
	case <-ctx.Done():
		return nil, fmt.Errorf("parse metrics: openmetrics: %w", ctx.Err())
	}
}

// fetchModel returns the first model id of /v1/models (client.FetchModel,
// bounded by the scrape timeout), or "" (the error is logged at debug:
// model discovery is best effort here).
func (s *ServerScraper) fetchModel(ctx context.Context, hc *http.Client, cfg loopConfig) string {
	ctx, cancel := context.WithTimeout(ctx, cfg.timeout)
	defer cancel()
	model, err := client.FetchModel(ctx, hc, cfg.target.URL)
	if err != nil {
		s.logger.Debug("model discovery failed", "target", cfg.target.Name, "err", err)
		return ""
	}
	return serverLabel(model)
}

// fetchVersion returns the server's vLLM version from /version, or "".
func (s *ServerScraper) fetchVersion(ctx context.Context, client *http.Client, cfg loopConfig) string {
	body, _, err := s.get(ctx, client, cfg, "/version", "application/json", maxInfoBytes)
	if err != nil {
		s.logger.Debug("version discovery failed", "target", cfg.target.Name, "err", err)
		return ""
	}
	var v struct {
		Version string `json:"version"`
	}
	if err := json.Unmarshal(body, &v); err != nil {
		s.logger.Debug("version discovery failed", "target", cfg.target.Name, "err", err)
		return ""
	}
	return serverLabel(v.Version)
}
