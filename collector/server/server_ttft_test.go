package server

import (
	"fmt"
	"math"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"

	"github.com/vllm-prober/vllm-prober/config"
	"github.com/vllm-prober/vllm-prober/internal/quantile"
	"github.com/vllm-prober/vllm-prober/simulator"
	"github.com/vllm-prober/vllm-prober/simulator/simtest"
)

// TestServerTTFTFromSimulator scrapes the simulator around requests whose
// TTFT is known: without jitter, prefix caching or batching a request's
// TTFT is its prompt length times PrefillPerToken, so its bucket of
// vllm:time_to_first_token_seconds is known, and the trace confirms it.
func TestServerTTFTFromSimulator(t *testing.T) {
	o := simulator.DefaultOptions()
	o.Trace, o.Jitter, o.PrefixCaching = true, 0, false
	o.PrefillBase, o.PrefillPerToken = 0, time.Millisecond
	sim, url := simtest.Start(t, o)
	var now atomic.Int64 // the scrapes' clock, in Unix nanoseconds
	now.Store(fixedNow.UnixNano())
	h := newHarness(t, ScraperOptions{Now: func() time.Time { return time.Unix(0, now.Load()).UTC() }})
	h.Apply(&config.Config{Targets: []config.Target{{Name: "sim", URL: url, MetricsPath: "/metrics"}}})
	h.wait(t, "sim") // the first scrape, at fixedNow, before any request

	send := func(promptTokens int) {
		t.Helper()
		ids := strings.TrimSuffix(strings.Repeat("7,", promptTokens), ",")
		body := fmt.Sprintf(`{"model":"sim-llama","prompt":[%s],"max_tokens":1}`, ids)
		resp, err := http.Post(url+"/v1/completions", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("status %s", resp.Status)
		}
	}
	scrapeAt := func(at time.Time) {
		t.Helper()
		now.Store(at.UnixNano())
		h.tick(t, "sim")
	}
	// Before the window: one request in (0.75, 1].
	send(870)
	scrapeAt(fixedNow.Add(2 * time.Minute))
	// Inside the window: three in (0.25, 0.5], then one in (0.5, 0.75].
	for range 3 {
		send(350)
	}
	scrapeAt(fixedNow.Add(4 * time.Minute))
	send(620)
	scrapeAt(fixedNow.Add(6 * time.Minute))
	scrapeAt(fixedNow.Add(8 * time.Minute)) // no request since the last one

	// The trace's TTFT (arrival to the first written event) includes the
	// HTTP handler's share, so it bounds the engine's TTFT from above.
	bounds := [][2]float64{{0.75, 1}, {0.25, 0.5}, {0.25, 0.5}, {0.25, 0.5}, {0.5, 0.75}}
	trace := sim.Trace()
	if len(trace) != len(bounds) {
		t.Fatalf("trace has %d requests, want %d", len(trace), len(bounds))
	}
	for i, rec := range trace {
		if ttft := rec.Events[0].Offset; ttft <= bounds[i][0] || ttft > bounds[i][1] {
			t.Errorf("request %d: trace TTFT %.3fs outside its bucket (%g, %g]", i, ttft, bounds[i][0], bounds[i][1])
		}
	}

	// By hand, over the 4 requests of the window: p50 has rank 2, the 2nd
	// of the 3 in (0.25, 0.5]; p99 has rank 3.96, 0.96 of the way through
	// the 1 in (0.5, 0.75].
	since, until := fixedNow.Add(time.Minute), fixedNow.Add(6*time.Minute)
	tests := []struct {
		name         string
		target       string
		model        string
		since, until time.Time
		want         ServerTTFT
	}{
		{"window after the first request", "sim", "sim-llama", since, until, ServerTTFT{Model: "sim-llama", From: fixedNow.Add(2 * time.Minute), To: until,
			Count: 4, P50: seconds(0.25 + 0.25*2.0/3), P99: seconds(0.5 + 0.25*0.96)}},
		{"whole history: 5 requests, p99 in (0.75, 1]", "sim", "sim-llama", fixedNow, until, ServerTTFT{Model: "sim-llama", From: fixedNow, To: until,
			Count: 5, P50: seconds(0.25 + 0.25*2.5/3), P99: seconds(0.75 + 0.25*0.95)}},
		{"one scrape in the window", "sim", "sim-llama", fixedNow.Add(5 * time.Minute), until, ServerTTFT{Model: "sim-llama",
			From: until, Missing: "fewer than two scrapes with a vllm:time_to_first_token_seconds series of this model in the window"}},
		{"no request between the scrapes", "sim", "sim-llama", until, fixedNow.Add(8 * time.Minute), ServerTTFT{Model: "sim-llama",
			From: until, To: fixedNow.Add(8 * time.Minute), Missing: "no request got its first token between the scrapes in the window"}},
		{"another model", "sim", "other", since, until, ServerTTFT{Model: "other",
			Missing: "fewer than two scrapes with a vllm:time_to_first_token_seconds series of this model in the window"}},
		{"unknown model", "sim", "", since, until, ServerTTFT{Missing: "the target's model is not known yet"}},
		{"target not scraped", "nope", "sim-llama", since, until, ServerTTFT{Model: "sim-llama",
			Missing: "the target's server metrics are not scraped (no metrics_path)"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := h.ServerTTFT(tc.target, "", tc.model, tc.since, tc.until)
			if got.P50, got.P99 = got.P50.Round(time.Microsecond), got.P99.Round(time.Microsecond); got != tc.want {
				t.Errorf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func seconds(s float64) time.Duration {
	return time.Duration(math.Round(s*1e6)) * time.Microsecond
}

func TestAddIncreaseCounterReset(t *testing.T) {
	inf := math.Inf(1)
	prev := []quantile.Bucket{{UpperBound: 1, Count: 5}, {UpperBound: inf, Count: 9}}
	cur := []quantile.Bucket{{UpperBound: 1, Count: 7}, {UpperBound: inf, Count: 3}} // +Inf restarted
	got := addIncrease(addIncrease(nil, prev, prev), prev, cur)
	want := []quantile.Bucket{{UpperBound: 1, Count: 2}, {UpperBound: inf, Count: 3}}
	if !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

// TestTTFTSnapshotOfModel: a discovered model id longer than a label
// value may be (serverLabel) still finds its series.
func TestTTFTSnapshotOfModel(t *testing.T) {
	long := strings.Repeat("m", MaxServerLabelBytes+10)
	b := []quantile.Bucket{{UpperBound: math.Inf(1), Count: 1}}
	snap := ttftSnapshot{byModel: map[string][]quantile.Bucket{long: b, "short": nil}}
	for _, model := range []string{long, serverLabel(long)} {
		if got, ok := snap.ofModel(model); !ok || !slices.Equal(got, b) {
			t.Errorf("ofModel(%.12q...) = %v, %v", model, got, ok)
		}
	}
	if _, ok := snap.ofModel("other"); ok {
		t.Error("an unknown model was found")
	}
}

// TestRecordTTFTSumsEngines: a model's series of several engines are
// summed per bucket, as sum by (le) would.
func TestRecordTTFTSumsEngines(t *testing.T) {
	text := lines(
		"# TYPE vllm:time_to_first_token_seconds histogram",
		`vllm:time_to_first_token_seconds_bucket{engine="0",model_name="m",le="0.5"} 1`,
		`vllm:time_to_first_token_seconds_bucket{engine="0",model_name="m",le="+Inf"} 2`,
		`vllm:time_to_first_token_seconds_sum{engine="0",model_name="m"} 1`,
		`vllm:time_to_first_token_seconds_count{engine="0",model_name="m"} 2`,
		`vllm:time_to_first_token_seconds_bucket{engine="1",model_name="m",le="0.5"} 3`,
		`vllm:time_to_first_token_seconds_bucket{engine="1",model_name="m",le="+Inf"} 3`,
		`vllm:time_to_first_token_seconds_sum{engine="1",model_name="m"} 1`,
		`vllm:time_to_first_token_seconds_count{engine="1",model_name="m"} 3`)
	mfs, err := decodeFamilies(strings.NewReader(text), expfmt.NewFormat(expfmt.TypeTextPlain))
	if err != nil {
		t.Fatal(err)
	}
	allow, _ := compileAllow(DefaultAllow)
	b := newFamilyBuilder([]string{"target"}, []string{"t"}, allow, DefaultMaxSeriesPerTarget, nil)
	for _, mf := range mfs {
		b.add(mf)
	}
	l := &targetLoop{families: b.out}
	l.recordTTFT(fixedNow)
	want := []quantile.Bucket{{UpperBound: 0.5, Count: 4}, {UpperBound: math.Inf(1), Count: 5}}
	if got, _ := l.ttft[0].ofModel("m"); len(l.ttft) != 1 || !slices.Equal(got, want) {
		t.Errorf("snapshots %v, want one with %v", l.ttft, want)
	}
}
