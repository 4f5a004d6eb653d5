package schedule

import (
	"context"
	"fmt"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/prometheus/common/model"

	"github.com/vllm-prober/vllm-prober/config"
	"github.com/vllm-prober/vllm-prober/internal/memtest"
	"github.com/vllm-prober/vllm-prober/probe"
	"github.com/vllm-prober/vllm-prober/probe/client"
	"github.com/vllm-prober/vllm-prober/probe/ledger"
	"github.com/vllm-prober/vllm-prober/simulator"
	"github.com/vllm-prober/vllm-prober/simulator/simtest"
)

// engSimProbe is a probe of the simulator with a quality check and a
// short timeout, so stalls end as client timeouts.
func engSimProbe(name, api string, rate float64) config.Probe {
	return config.Probe{
		Name: name, API: api, Rate: rate, Burstiness: 1, MaxInFlight: 16,
		Timeout: model.Duration(300 * time.Millisecond),
		Request: config.Request{MaxTokens: 16},
		Workload: config.Workload{Prompts: []config.Prompt{{
			Prompt:   "What is 12*12? Digits only.",
			Messages: []config.Message{{Role: "user", Content: "What is 12*12? Digits only."}},
			Expect:   config.Expect{Regex: config.Regexp{Regexp: regexp.MustCompile(`\b144\b`), Source: `\b144\b`}},
		}}},
		Quality: config.Quality{FinishReasons: []string{"stop", "length"}, MinOutputTokens: 1},
	}
}

// TestEngineAgainstSimulator runs the engine with the real request path at
// 20 requests/s against the simulator with faults on, and checks that the
// ledger holds one record per offered request with the same dispositions
// the other sink saw.
func TestEngineAgainstSimulator(t *testing.T) {
	o := simulator.DefaultOptions()
	o.Seed, o.Jitter = 1, 0
	sim, err := simulator.New(o)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(sim.Handler())
	defer srv.Close()
	defer sim.Close()
	sim.SetFaults(simulator.Faults{HTTP500: 0.1, Disconnect: 0.1, BadAnswer: 0.1, ErrorEvent: 0.05,
		Stall: 0.05, StallDuration: 2 * time.Second})

	path := filepath.Join(t.TempDir(), "ledger.jsonl")
	lg, err := ledger.Open(config.Ledger{Path: path, RecordText: config.RecordTextFailures}, nil)
	if err != nil {
		t.Fatal(err)
	}
	l := newRecSink()
	e := NewEngine(EngineOptions{Sinks: []probe.Sink{l, lg}, Grace: 500 * time.Millisecond})
	cfg := &config.Config{
		Targets: []config.Target{{Name: "sim", URL: srv.URL, Model: "sim-llama"}},
		Probes:  []config.Probe{engSimProbe("chat", config.APIChat, 10), engSimProbe("completions", config.APICompletions, 10)},
	}
	if err := e.Apply(cfg); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1500 * time.Millisecond)
	recs := StopAndReadLedger(t, e, lg, path)
	fromLedger, fromListener := map[string]int{}, map[string]int{}
	for _, r := range recs {
		fromLedger[fmt.Sprint(r.Probe, " ", r.Disposition, "/", r.Reason)]++
	}
	total := 0
	for _, p := range cfg.Probes {
		offered, finished := l.counts("sim", p.Name)
		total += offered
		if offered == 0 || offered != finished {
			t.Errorf("%s: offered %d, finished %d", p.Name, offered, finished)
		}
		for _, r := range l.results("sim", p.Name) {
			fromListener[fmt.Sprint(r.Probe, " ", r.Disposition, "/", r.Reason)]++
		}
	}
	if len(recs) != total {
		t.Errorf("%d ledger records, %d offered requests", len(recs), total)
	}
	if fmt.Sprint(fromLedger) != fmt.Sprint(fromListener) {
		t.Errorf("ledger dispositions %v\nlistener dispositions %v", fromLedger, fromListener)
	}
	accepted, failed := 0, 0
	for _, r := range recs {
		switch r.Disposition {
		case probe.Accepted:
			accepted++
		case probe.ServerFailure, probe.QualityFailure, probe.ClientTimeout:
			failed++
		}
		if r.Sent != nil && r.RequestID == "" {
			t.Errorf("seq %d of %s was sent without a request id", r.Seq, r.Probe)
		}
	}
	if accepted == 0 || failed == 0 {
		t.Errorf("%d accepted and %d failed requests, want both: %v", accepted, failed, fromLedger)
	}
}

// sharedRequester is one warm Requester as the Sender of many pairs,
// closed once by its test.
type sharedRequester struct{ *client.Requester }

func (sharedRequester) Close() {}

// sendOnly is a sharedRequester that is not a Preparer.
type sendOnly struct{ r sharedRequester }

func (s sendOnly) Do(ctx context.Context, res *probe.Result) { s.r.Do(ctx, res) }
func (sendOnly) Close()                                      {}

// TestLoopStackPerIdlePair: 2,000 loops parked until their next request,
// each having prepared it with a real Requester (its JSON body encoded),
// keep at most 512 bytes of goroutine stack each, after a GC, more than
// loops that prepare nothing: the encoding's stack is not a loop's own
// (~1.9 KiB more, 4 KiB stacks for 2, when it was; docs/BENCHMARKS.md,
// "Collector and history at the steady state").
func TestLoopStackPerIdlePair(t *testing.T) {
	const n = 2000
	_, url := simtest.Start(t, simulator.DefaultOptions())
	target, p := config.Target{Name: "sim", URL: url, Model: "sim-llama"}, engSimProbe("chat", config.APIChat, 0.05)
	p.Timeout = model.Duration(10 * time.Second)
	r, err := client.New(target, p, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	warm := probe.Result{Seq: 1, Target: target.Name, Probe: p.Name, Scheduled: time.Now()}
	if r.Do(context.Background(), &warm); warm.Disposition != probe.Accepted {
		t.Fatalf("warming request: %s %s", warm.Disposition, warm.Error)
	}
	cfg := testConfig(nil, p)
	for i := range n {
		cfg.Targets = append(cfg.Targets, config.Target{Name: fmt.Sprintf("t-%04d", i), URL: url, Model: "sim-llama"})
	}
	// Both engines' loops stay parked until the end, so the second's do
	// not reuse the stacks of the first's.
	perLoop := func(s Sender) float64 {
		clock := newFakeClock(testEpoch)
		e := NewEngine(EngineOptions{Now: clock.Now, Sleep: clock.Sleep,
			NewRequester: func(config.Target, config.Probe) (Sender, error) { return s, nil }})
		t.Cleanup(func() { e.Shutdown(context.Background()) })
		return memtest.StackBytesPer(n, func() any {
			if err := e.ApplyPairs(cfg.Pairs()); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "loops to park", func() bool { return clock.parkedCount() == n })
			return nil
		})
	}
	plain, preparing := perLoop(sendOnly{sharedRequester{r}}), perLoop(sharedRequester{r})
	t.Logf("stack bytes per idle loop: %.0f, %.0f with a prepared request", plain, preparing)
	if preparing-plain > 512 {
		t.Errorf("a loop that prepared its request keeps %.0f stack bytes more than one that did not, want at most 512", preparing-plain)
	}
}
