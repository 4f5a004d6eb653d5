// Package simtest runs the project's vLLM simulator for tests: one way to
// start it, so every test gets a loopback server that stops when the test
// ends.
package simtest

import (
	"testing"

	"github.com/vllm-prober/vllm-prober/simulator"
)

// Start serves a simulator with o, changed by each non-nil edit in turn,
// on a free loopback port until the test ends, and returns it with its
// base URL.
func Start(t testing.TB, o simulator.Options, edit ...func(*simulator.Options)) (*simulator.Server, string) {
	t.Helper()
	for _, e := range edit {
		if e != nil {
			e(&o)
		}
	}
	sim, url, err := simulator.Serve(o, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sim.Close() })
	return sim, url
}
