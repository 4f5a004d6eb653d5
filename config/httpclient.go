package config

import (
	"net/http"

	promconfig "github.com/prometheus/common/config"

	"github.com/vllm-prober/vllm-prober/internal/httpclient"
)

// NewHTTPClient builds the HTTP client of a target from its
// http_client_config, for probe requests and server scrapes alike, with
// the redirect policy of httpclient.New.
func NewHTTPClient(hc promconfig.HTTPClientConfig, name string, opts ...promconfig.HTTPClientOption) (*http.Client, error) {
	return httpclient.New(hc, name, opts...)
}
