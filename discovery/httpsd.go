package discovery

import (
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"time"

	promconfig "github.com/prometheus/common/config"

	"github.com/vllm-prober/vllm-prober/internal/httpclient"
	"github.com/vllm-prober/vllm-prober/internal/redact"
)

// httpSource fetches a Prometheus http_sd endpoint.
type httpSource struct {
	url     string
	shown   string // url with its secrets masked, for errors
	client  *http.Client
	refresh time.Duration
}

// newHTTPSD checks c and returns its source and refresh interval.
func newHTTPSD(c HTTPSDConfig) (*httpSource, time.Duration, error) {
	u, err := url.Parse(c.URL)
	switch {
	case c.URL == "":
		return nil, 0, invalid("http_sd.url", "required")
	case err != nil:
		return nil, 0, invalid("http_sd.url", "%s", redact.Text(err.Error()))
	case u.Scheme != "http" && u.Scheme != "https":
		return nil, 0, invalid("http_sd.url", "%q: the scheme must be http or https", redact.URL(c.URL))
	case u.Host == "":
		return nil, 0, invalid("http_sd.url", "%q: no host", redact.URL(c.URL))
	}
	if err := c.HTTPClientConfig.Validate(); err != nil {
		return nil, 0, invalid("http_sd.http_client_config", "%w", err)
	}
	client, err := httpclient.New(c.HTTPClientConfig, "http_sd", promconfig.WithUserAgent(httpclient.UserAgent()))
	if err != nil {
		return nil, 0, invalid("http_sd.http_client_config", "%w", err)
	}
	refresh := refreshOf(c.Refresh, DefaultHTTPSDRefresh)
	return &httpSource{url: c.URL, shown: redact.URL(c.URL), client: client, refresh: refresh}, refresh, nil
}

// lookup GETs the endpoint. Anything but a 200 answer with a JSON body of
// at most maxDocumentSize bytes fails the refresh.
func (s *httpSource) lookup(ctx context.Context) ([]Replica, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.url, nil)
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", s.shown, err)
	}
	req.Header.Set("Accept", "application/json")
	// Prometheus sends it too; endpoints written for it may rely on it.
	req.Header.Set("X-Prometheus-Refresh-Interval-Seconds", strconv.FormatFloat(s.refresh.Seconds(), 'f', -1, 64))
	resp, err := s.client.Do(req)
	if err != nil {
		var urlErr *url.Error
		if errors.As(err, &urlErr) {
			urlErr.URL = s.shown
			return nil, err
		}
		return nil, fmt.Errorf("GET %s: %w", s.shown, err)
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: status %s, want 200", s.shown, resp.Status)
	}
	if mt, _, err := mime.ParseMediaType(resp.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		return nil, fmt.Errorf("GET %s: Content-Type %q, want application/json", s.shown, resp.Header.Get("Content-Type"))
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxDocumentSize+1))
	if err != nil {
		return nil, fmt.Errorf("GET %s: reading the body: %w", s.shown, err)
	}
	if len(body) > maxDocumentSize {
		return nil, fmt.Errorf("GET %s: body larger than the %d MiB cap", s.shown, maxDocumentSize>>20)
	}
	return parseJSON("GET "+s.shown+": body", body)
}
