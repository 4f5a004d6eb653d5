package config

import (
	"time"

	promconfig "github.com/prometheus/common/config"
	"github.com/prometheus/common/model"
)

// DefaultServerMetricsAllow is the default server_metrics.allow (anchored):
// vLLM's latency histograms, queue/running/waiting, KV cache usage,
// preemptions, request outcomes, token counters, prefix cache and
// speculative decoding, including names older vLLM versions used. Info
// gauges and `_created` series are left out.
const DefaultServerMetricsAllow = `vllm:(` +
	`time_to_first_token_seconds|inter_token_latency_seconds|time_per_output_token_seconds|` +
	`request_time_per_output_token_seconds|e2e_request_latency_seconds|` +
	`request_(queue|prefill|decode|inference)_time_seconds|` +
	`num_requests_(running|waiting|waiting_by_reason)|kv_cache_usage_perc|gpu_cache_usage_perc|` +
	`num_preemptions_total|request_success_total|` +
	`(prompt|generation)_tokens_total|prompt_tokens_(by_source|cached)_total|` +
	`(external_|gpu_)?prefix_cache_(queries|hits)_total|` +
	`spec_decode_[a-z_]+_total)`

// Defaults of a discovery target's replica keys, set only on a target with
// discovery (the keys mean nothing without it).
const (
	DefaultReplicaScheme = "http"
	DefaultMaxReplicas   = 256
)

// Defaults applied to fields absent from the file. Lists are copied before
// use, so these values are never aliased by a loaded Config.
var (
	// DefaultGlobal is the global section when absent.
	DefaultGlobal = Global{
		Ledger:       Ledger{MaxSizeMB: 64, MaxFiles: 4, RecordText: RecordTextFailures},
		HistoryLimit: 200,
		ServerMetrics: ServerMetrics{
			Interval: model.Duration(15 * time.Second),
			Timeout:  model.Duration(5 * time.Second),
			Allow:    mustAnchored(DefaultServerMetricsAllow),
		},
		Histograms: Histograms,
	}

	// DefaultTarget holds a target's defaults.
	DefaultTarget = Target{
		MetricsPath:      "/metrics",
		HTTPClientConfig: defaultHTTPClientConfig(),
	}

	// DefaultProbe holds a probe's defaults. Rate has none: it is required.
	DefaultProbe = Probe{
		Burstiness:  1,
		MaxInFlight: 16,
		Timeout:     model.Duration(30 * time.Second),
		Request:     Request{MaxTokens: 64},
		Quality:     Quality{FinishReasons: []string{"stop", "length"}, MinOutputTokens: 1},
		Objective:   0.99,
	}

	// DefaultFingerprint is what a probe's fingerprint block starts from
	// when it leaves a key out.
	DefaultFingerprint = Fingerprint{Tokens: 16, Confirm: 3}
)

func mustAnchored(src string) Regexp {
	re, err := anchored(src)
	if err != nil {
		panic(err)
	}
	return re
}

// defaultHTTPClientConfig is prometheus/common's default with redirects
// not followed (see NewHTTPClient).
func defaultHTTPClientConfig() promconfig.HTTPClientConfig {
	hc := promconfig.DefaultHTTPClientConfig
	hc.FollowRedirects = false
	return hc
}
