package status_test

import (
	"context"
	"math"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/common/model"

	"github.com/vllm-prober/vllm-prober/config"
	"github.com/vllm-prober/vllm-prober/probe"
	"github.com/vllm-prober/vllm-prober/probe/schedule"
	"github.com/vllm-prober/vllm-prober/simulator"
	"github.com/vllm-prober/vllm-prober/status"
)

// resultLog keeps every finished Result, for hand counts.
type resultLog struct {
	mu      sync.Mutex
	results []probe.Result
}

func (l *resultLog) PairStarted(config.Pair) {}

func (l *resultLog) PairStopped(config.PairKey) {}

func (l *resultLog) Offered(config.PairKey) {}

func (l *resultLog) Finished(r *probe.Result) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.results = append(l.results, *r)
}

// TestTrackerUnderOverload drives a one-sequence simulator with some 500s
// far past its capacity through a probe with max_in_flight 2, stops the
// engine with requests still running, and checks the status numbers
// against a hand count of the results: in-flight-cap cancellations stay in
// the acceptance denominator, shutdown cancellations leave it, and the
// completed rate counts the server's answers, 500s included.
func TestTrackerUnderOverload(t *testing.T) {
	o := simulator.DefaultOptions()
	o.Seed, o.Jitter, o.MaxNumSeqs = 3, 0, 1
	o.DecodeBase = 10 * time.Millisecond
	o.Faults = simulator.Faults{HTTP500: 0.2}
	sim, err := simulator.New(o)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(sim.Handler())
	t.Cleanup(func() { srv.Close(); sim.Close() })

	cfg := &config.Config{
		Targets: []config.Target{{Name: "sim", URL: srv.URL, Model: o.Model}},
		Probes: []config.Probe{{
			Name: "chat", API: config.APIChat, Rate: 40, Burstiness: math.Inf(1), MaxInFlight: 2,
			Timeout: model.Duration(5 * time.Second), Request: config.Request{MaxTokens: 8},
			Workload:  config.Workload{Prompts: []config.Prompt{{Messages: []config.Message{{Role: "user", Content: "Say hi."}}}}},
			Objective: 0.99,
		}},
	}
	tr := status.NewTracker(status.TrackerOptions{Window: time.Hour})
	log := &resultLog{}
	e := schedule.NewEngine(schedule.EngineOptions{Sinks: []probe.Sink{tr, log}, Grace: 20 * time.Millisecond})
	if err := e.Apply(cfg); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Second)
	if err := e.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	ps := tr.Snapshot()[0]

	// Hand count, spelled from dispositions and reasons.
	var accepted, shed, abandoned, completed int
	for _, r := range log.results {
		switch {
		case r.Disposition == probe.Accepted:
			accepted++
			completed++
		case r.Disposition == probe.LatencyFailure, r.Disposition == probe.QualityFailure:
			completed++
		case r.Disposition == probe.ServerFailure && r.Reason == probe.ReasonHTTP5xx:
			completed++
		case r.Disposition == probe.Cancelled && r.Reason == probe.ReasonInFlightCap:
			shed++
		case r.Disposition == probe.Cancelled && r.Reason == probe.ReasonShutdown:
			abandoned++
		}
	}
	offered := len(log.results)
	t.Logf("offered %d, accepted %d, shed %d, abandoned %d, completed %d", offered, accepted, shed, abandoned, completed)
	if shed == 0 || accepted == 0 || completed == accepted {
		t.Fatalf("the run did not overload the probe with failures: shed %d, accepted %d, completed %d", shed, accepted, completed)
	}
	if ps.Offered != uint64(offered) || ps.InFlight != 0 {
		t.Errorf("offered %d, in flight %d; want %d, 0", ps.Offered, ps.InFlight, offered)
	}
	if want := float64(accepted) / float64(offered-abandoned); math.Abs(ps.Acceptance-want) > 1e-9 {
		t.Errorf("acceptance %v, want accepted / (offered - abandoned) = %d / %d = %v", ps.Acceptance, accepted, offered-abandoned, want)
	}
	secs := ps.Window.Seconds()
	if got := ps.Completed * secs; math.Abs(got-float64(completed)) > 1e-6 {
		t.Errorf("completed rate %v/s over %v = %v requests, want %d", ps.Completed, ps.Window, got, completed)
	}
	if got := ps.Goodput * secs; math.Abs(got-float64(accepted)) > 1e-6 {
		t.Errorf("goodput %v/s over %v = %v requests, want %d", ps.Goodput, ps.Window, got, accepted)
	}

	// The last hour's per-minute counts hold the same requests.
	var ended, hourAccepted int
	for _, m := range ps.Minutes {
		ended, hourAccepted = ended+m.Ended, hourAccepted+m.Accepted
	}
	if ended != offered || hourAccepted != accepted {
		t.Errorf("last hour: %d ended, %d accepted; want %d, %d", ended, hourAccepted, offered, accepted)
	}
	if got := ps.HourDispositions[probe.Cancelled]; got != uint64(shed+abandoned) {
		t.Errorf("last hour: %d cancelled, want %d shed + %d abandoned", got, shed, abandoned)
	}
	// Recent requests: the newest ended last; a sent one has its phases.
	_, recent, ok := tr.Pair(config.PairKey{Target: "sim", Probe: "chat"})
	if !ok || len(recent) != 20 {
		t.Fatalf("recent requests: %d (ok %v), want 20", len(recent), ok)
	}
	last := log.results[len(log.results)-1]
	if !recent[0].Scheduled.Equal(last.Scheduled) || recent[0].Disposition != last.Disposition {
		t.Errorf("newest recent request %v %s, want the last result %v %s", recent[0].Scheduled, recent[0].Disposition, last.Scheduled, last.Disposition)
	}
	var phased bool
	for _, v := range recent {
		phased = phased || v.Phase(probe.PhaseHeaders) > 0
	}
	if !phased {
		t.Error("no recent request has an HTTP headers phase")
	}
}
