package config

import (
	"time"

	promconfig "github.com/prometheus/common/config"
	"github.com/prometheus/common/model"
)

// DefaultServerMetricsAllow is the default server_metrics.allow: every
// vLLM metric family (the vllm: prefix), anchored.
const DefaultServerMetricsAllow = "vllm:.*"

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
	}

	// DefaultTarget holds a target's defaults.
	DefaultTarget = Target{
		MetricsPath:      "/metrics",
		HTTPClientConfig: promconfig.DefaultHTTPClientConfig,
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
)

func mustAnchored(src string) Regexp {
	re, err := anchored(src)
	if err != nil {
		panic(err)
	}
	return re
}
