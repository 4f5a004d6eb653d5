package perf

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vllm-prober/vllm-prober/probe"
	"github.com/vllm-prober/vllm-prober/simulator"
)

// TestAccuracyOf matches hand-made client results with a hand-made trace:
// the TTFT error per request, the ITL error per gap and the lag are what
// the arithmetic by hand gives, and a request that failed or that the
// server never saw fails the run.
func TestAccuracyOf(t *testing.T) {
	t0 := time.Now()
	ms := func(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }
	at := func(v float64) time.Time { return t0.Add(ms(v)) }
	trace := map[string]simulator.TraceRecord{
		// Server TTFT 20 ms; gaps 10 and 12 ms.
		"a": {RequestID: "a", Arrival: at(1), Events: []simulator.TraceEvent{
			{Time: at(21), Kind: "content", Tokens: 1}, {Time: at(31), Kind: "content", Tokens: 1},
			{Time: at(43), Kind: "finish", Tokens: 1}, {Time: at(43), Kind: "done"}}},
		// Server TTFT 30 ms; gap 5 ms.
		"b": {RequestID: "b", Arrival: at(100), Events: []simulator.TraceEvent{
			{Time: at(130), Kind: "content", Tokens: 1}, {Time: at(135), Kind: "finish", Tokens: 1}}},
	}
	a := &probe.Result{RequestID: "a", Disposition: probe.Accepted, Lag: ms(0.2), Chunks: 3,
		TTFT: ms(20.5), ITLs: []time.Duration{ms(10.1), ms(11.8)}} // errors 0.5; 0.1, 0.2
	b := &probe.Result{RequestID: "b", Disposition: probe.Accepted, Lag: ms(0.4), Chunks: 2,
		TTFT: ms(29.7), ITLs: []time.Duration{ms(5.3)}} // errors 0.3 (absolute); 0.3
	tests := []struct {
		name    string
		results []*probe.Result
		want    ClientAccuracy
		wantErr string
	}{
		{name: "matched", results: []*probe.Result{a, b}, want: ClientAccuracy{Requests: 2,
			TTFT: Stats{N: 2, P50: ms(0.3), P99: ms(0.5), Max: ms(0.5)},
			ITL:  Stats{N: 3, P50: ms(0.2), P99: ms(0.3), Max: ms(0.3)},
			Lag:  Stats{N: 2, P50: ms(0.2), P99: ms(0.4), Max: ms(0.4)}}},
		{name: "failed request", results: []*probe.Result{a, {RequestID: "c", Disposition: probe.ServerFailure, Reason: probe.ReasonHTTP5xx, Error: "http 500"}},
			wantErr: "request c ended server_failure/http_5xx: http 500"},
		{name: "untraced", results: []*probe.Result{{RequestID: "x", Disposition: probe.Accepted, Chunks: 1}}, wantErr: "request x: no trace record"},
		{name: "token events differ", results: []*probe.Result{{RequestID: "b", Disposition: probe.Accepted, Chunks: 3, ITLs: make([]time.Duration, 2)}},
			wantErr: "server wrote 2 token events, client saw 3"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := accuracyOf(tc.results, trace)
			if !resultWanted(t, err, tc.wantErr) {
				return
			}
			if !near(got.TTFT, tc.want.TTFT) || !near(got.ITL, tc.want.ITL) || got.Lag != tc.want.Lag || got.Requests != tc.want.Requests {
				t.Errorf("got  %d requests, TTFT %v, ITL %v, lag %v\nwant %d requests, TTFT %v, ITL %v, lag %v", got.Requests, got.TTFT, got.ITL, got.Lag,
					tc.want.Requests, tc.want.TTFT, tc.want.ITL, tc.want.Lag)
			}
		})
	}
}

// near compares stats to the nanosecond: the hand-made milliseconds are
// floats.
func near(a, b Stats) bool {
	eq := func(x, y time.Duration) bool { return (x - y).Abs() <= time.Nanosecond }
	return a.N == b.N && eq(a.P50, b.P50) && eq(a.P99, b.P99) && eq(a.Max, b.Max)
}

// resultWanted fails t unless err is what a case wants: no error for
// want "", else an error containing want. It reports whether the case
// goes on to check its result (no error was wanted).
func resultWanted(t *testing.T, err error, want string) bool {
	t.Helper()
	if want != "" {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("err = %v, want %q", err, want)
		}
		return false
	}
	if err != nil {
		t.Fatal(err)
	}
	return true
}

// TestAccuracyMedian checks that each p50 is the median over the rounds,
// taken statistic by statistic, so one disturbed round does not move it,
// and that each p99 is that of every round's samples together, with their
// count.
func TestAccuracyMedian(t *testing.T) {
	round := func(ttft50 time.Duration, ttfts ...time.Duration) map[string]ClientAccuracy {
		return map[string]ClientAccuracy{ClientDaemon: {Requests: len(ttfts), TTFT: Stats{P50: ttft50}, Burst: 1,
			samples: errorSamples{ttft: ttfts}, lags: ttfts}}
	}
	// 300 samples: 1..300 µs spread over three rounds; the p99 of all of
	// them is the 297th (nearest rank), which no round has alone.
	var all [3][]time.Duration
	for v := range 300 {
		all[v%3] = append(all[v%3], time.Duration(v+1)*time.Microsecond)
	}
	a := AccuracyResult{Rounds: []map[string]ClientAccuracy{round(3, all[0]...), round(1, all[1]...), round(900, all[2]...)}}
	got := a.Median(ClientDaemon)
	want := Stats{N: 300, P50: 3, P99: 297 * time.Microsecond, Max: 300 * time.Microsecond}
	if got.Requests != 300 || got.Burst != 3 || got.TTFT != want || got.Lag.N != 300 || got.Lag.P99 != want.P99 || got.ITL.N != 0 {
		t.Errorf("got %+v, want TTFT %+v", got, want)
	}
}

// TestAccuracySimulatorKeepsUp checks that the accuracy runs' simulator
// spends well under a second of engine time per second at the highest rate
// (2,000 requests/s of 64 prompt and 16 output tokens) beyond its fixed
// step costs, so it does not queue, and that the flags it is started with
// carry its engine model.
func TestAccuracySimulatorKeepsUp(t *testing.T) {
	o := accuracySimulator()
	if share := engineShare(o, 2000, accuracyInputTokens, accuracyOutputTokens); share > 0.1 {
		t.Errorf("engine share at 2,000 requests/s = %.2f of each second, want <= 0.1", share)
	}
	args := strings.Join(simulateArgs(o), " ")
	for _, want := range []string{"--prefill-per-token=0s", "--decode-per-seq=0s", "--max-num-seqs=4096", "--jitter=0", "--no-enable-prefix-caching", "--trace"} {
		if !strings.Contains(args, want) {
			t.Errorf("simulate args %q lack %s", args, want)
		}
	}
}

// TestWithTrace checks the accuracy part's execution traces: the file holds
// a Go execution trace of the run, the run's error comes back as it is, and
// a trace that cannot be written fails with its path.
func TestWithTrace(t *testing.T) {
	dir := t.TempDir()
	errRun := errors.New("run failed")
	path := filepath.Join(dir, "a-10-1-daemon.trace")
	if err := withTrace(path, func() error { return errRun }); !errors.Is(err, errRun) {
		t.Fatalf("err = %v, want the run's", err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(b, []byte("go 1.")) {
		t.Errorf("trace starts %q, want a Go execution trace header", b[:min(len(b), 16)])
	}
	bad := filepath.Join(dir, "missing", "x.trace")
	if err := withTrace(bad, func() error { return nil }); err == nil || !strings.Contains(err.Error(), bad) {
		t.Errorf("err = %v, want one naming %s", err, bad)
	}
}
