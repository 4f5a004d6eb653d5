//go:build e2e

// Package e2e holds the end-to-end tests that run the vllm-prober binary
// against the simulator with real Prometheus, promtool, Alertmanager,
// amtool and Chromium from Debian's packages.
package e2e

import (
	"os"
	"os/exec"
	"testing"

	"github.com/vllm-prober/vllm-prober/internal/daemontest"
)

// binary is the vllm-prober binary under test.
var binary string

func TestMain(m *testing.M) { os.Exit(daemontest.Main(m, "..", &binary)) }

// requireTool fails the test when a binary the e2e tests need is missing:
// .ci/run installs them, so a missing one is a broken environment, not a
// reason to skip.
func requireTool(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		t.Fatalf("%s not found on PATH: install it (see .ci/run): %v", name, err)
	}
	return p
}
