package bench

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"time"

	promconfig "github.com/prometheus/common/config"

	"github.com/vllm-prober/vllm-prober/config"
)

// serverVersion asks t's GET /version, with t's HTTP settings; it returns
// "" when the server has no such endpoint or does not answer.
func serverVersion(ctx context.Context, t config.Target) string {
	client, err := promconfig.NewClientFromConfig(t.HTTPClientConfig, "vllm_prober_capacity")
	if err != nil {
		return ""
	}
	defer client.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(ctx, versionTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(t.URL, "/")+"/version", nil)
	if err != nil {
		return ""
	}
	resp, err := client.Do(req)
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	var v struct {
		Version string `json:"version"`
	}
	if resp.StatusCode != http.StatusOK || json.NewDecoder(io.LimitReader(resp.Body, 64<<10)).Decode(&v) != nil {
		return ""
	}
	return strings.ToValidUTF8(v.Version, "?")
}

// versionTimeout bounds the GET /version of a capacity report.
const versionTimeout = 10 * time.Second
