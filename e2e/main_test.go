//go:build e2e

// Package e2e holds the end-to-end tests that run the vllm-prober binary
// against the simulator with real Prometheus, promtool, Alertmanager,
// amtool and Chromium from Debian's packages.
package e2e

import (
	"os"
	"testing"

	"github.com/vllm-prober/vllm-prober/internal/daemontest"
)

// binary is the vllm-prober binary under test.
var binary string

func TestMain(m *testing.M) { os.Exit(daemontest.Main(m, "..", &binary)) }
