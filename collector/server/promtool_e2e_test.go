//go:build e2e

package server

import (
	"bytes"
	"github.com/vllm-prober/vllm-prober/internal/promtext"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestPromtoolCheckMetrics lints the full exposition of every collector
// (build info included) with `promtool check metrics`. promtool flags every
// name containing a colon; the re-exported vllm:* names must keep their
// colons (docs/design.md, "Metrics"), so exactly that finding is accepted for
// vllm:* families and any other finding fails the test.
func TestPromtoolCheckMetrics(t *testing.T) {
	const promtool = "/usr/bin/promtool"
	if _, err := os.Stat(promtool); err != nil {
		t.Fatalf("promtool is required for this e2e test (Debian package prometheus, installed by .ci/run): %v", err)
	}
	reg := exampleRegistry(t)
	var out bytes.Buffer
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	if err := promtext.Encode(&out, mfs); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(promtool, "check", "metrics")
	cmd.Stdin = &out
	report, err := cmd.CombinedOutput()
	var problems []string
	for _, line := range strings.Split(strings.TrimSpace(string(report)), "\n") {
		if line == "" || strings.HasPrefix(line, "vllm:") && strings.HasSuffix(line, "metric names should not contain ':'") {
			continue
		}
		problems = append(problems, line)
	}
	if len(problems) > 0 {
		t.Errorf("promtool check metrics (exit %v):\n%s", err, strings.Join(problems, "\n"))
	}
}
