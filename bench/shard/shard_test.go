package shard

import (
	"encoding/json"
	"math"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/vllm-prober/vllm-prober/bench/openloop"
	"github.com/vllm-prober/vllm-prober/bench/report"
	"github.com/vllm-prober/vllm-prober/bench/stats"
	"github.com/vllm-prober/vllm-prober/internal/testfile"
	"github.com/vllm-prober/vllm-prober/probe"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    openloop.Shard
		wantErr bool
	}{
		{"", openloop.Shard{}, false},
		{"0/1", openloop.Shard{Index: 0, Count: 1}, false},
		{"2/3", openloop.Shard{Index: 2, Count: 3}, false},
		{"3/3", openloop.Shard{}, true},
		{"-1/3", openloop.Shard{}, true},
		{"1/0", openloop.Shard{}, true},
		{"1", openloop.Shard{}, true},
		{"a/b", openloop.Shard{}, true},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := Parse(tc.in)
			if (err != nil) != tc.wantErr || got != tc.want {
				t.Fatalf("Parse(%q) = %+v, %v; want %+v, error %v", tc.in, got, err, tc.want, tc.wantErr)
			}
			if tc.in != "" && err == nil && String(got) != tc.in {
				t.Errorf("String(%+v) = %q, want %q", got, String(got), tc.in)
			}
		})
	}
}

// TestJoin: the parts' requests come back in planned order (by Seq), the
// run ends with the last worker's end, and an interrupted worker's stop
// is the run's.
func TestJoin(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	req := func(seq uint64) Request {
		return Request{Result: &probe.Result{Seq: seq}, Ended: t0.Add(time.Duration(seq) * time.Second), QueuedNS: time.Duration(seq)}
	}
	a := Part{Start: t0, SpanNS: time.Minute, TimeoutNS: time.Second, End: t0.Add(10 * time.Second), Requests: []Request{req(1), req(3)}}
	b := Part{Start: t0, SpanNS: time.Minute, TimeoutNS: time.Second, End: t0.Add(20 * time.Second), Interrupted: true,
		Stopped: t0.Add(15 * time.Second), Requests: []Request{req(2), req(4)}}
	run := Join([]Part{b, a})
	for i, r := range run.Results {
		if r.Seq != uint64(i+1) || run.Ended[i] != t0.Add(time.Duration(i+1)*time.Second) || run.Queued[i] != time.Duration(i+1) {
			t.Errorf("request %d: seq %d ended %v queued %v, want seq %d in planned order", i, r.Seq, run.Ended[i], run.Queued[i], i+1)
		}
	}
	if len(run.Results) != 4 || run.End != b.End || !run.Interrupted || run.Stopped != b.Stopped || run.Span != time.Minute {
		t.Errorf("joined run: %d requests, end %v, interrupted %v at %v, span %v", len(run.Results), run.End, run.Interrupted, run.Stopped, run.Span)
	}
}

// TestReadResults writes bench workers' shard blocks and checks what
// merge accepts and what it refuses, with the missing shards named.
func TestReadResults(t *testing.T) {
	dir := t.TempDir()
	write := func(name, runID, shard string) string {
		b, err := json.Marshal(map[string]any{"shard": File{RunID: runID, Shard: shard}})
		if err != nil {
			t.Fatal(err)
		}
		return testfile.Write(t, dir, name, string(b))
	}
	s0, s2 := write("s0.json", "r1", "0/3"), write("s2.json", "r1", "2/3")
	got, err := ReadResults([]string{s2, s0})
	if err != nil {
		t.Fatal(err)
	}
	if got[0].Shard != (openloop.Shard{Index: 2, Count: 3}) || got[1].Path != s0 {
		t.Errorf("read %+v", got)
	}
	if m := Missing(got); len(m) != 1 || m[0] != "1/3" {
		t.Errorf("missing %v, want [1/3]", m)
	}
	for _, tc := range []struct {
		name  string
		paths []string
		want  string
	}{
		{"none", nil, "no results to merge"},
		{"other run", []string{s0, write("x.json", "r2", "1/3")}, "refusing to merge shards of different runs"},
		{"other count", []string{s0, write("c.json", "r1", "1/4")}, "the shard counts differ"},
		{"twice", []string{s0, s0}, "are both shard 0/3 of run r1"},
		{"bad shard", []string{write("b.json", "r1", "3/3")}, "b.json: shard.shard: --shard \"3/3\""},
		{"not sharded", []string{write("n.json", "", "")}, "not a sharded bench result"},
		{"absent", []string{filepath.Join(dir, "absent.json")}, "absent.json"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := ReadResults(tc.paths); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// TestSettingsRoundTrip: the run's settings survive JSON, an infinite rate
// and a goodput objective of 0 included; a bad field is named.
func TestSettingsRoundTrip(t *testing.T) {
	want := report.Settings{Backend: "openai", Model: "m", NumPrompts: 7, RequestRate: math.Inf(1), Burstiness: 0.5, MaxConcurrency: 2,
		Goodput: stats.Goodput{TTFT: 0, HasTTFT: true, E2EL: 1500 * time.Millisecond, HasE2EL: true}, PercentileMetrics: []string{"ttft"},
		Percentiles: []float64{99}}
	b, err := json.Marshal(toSettings(want))
	if err != nil {
		t.Fatal(err)
	}
	var ss Settings
	if err := json.Unmarshal(b, &ss); err != nil {
		t.Fatal(err)
	}
	got, err := ss.Report()
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("read back %+v, want %+v", got, want)
	}
	ss.Goodput["itl"] = 5
	if _, err := ss.Report(); err == nil || !strings.HasPrefix(err.Error(), "goodput_ms: ") {
		t.Errorf("unknown goodput key: %v, want an error naming goodput_ms", err)
	}
}

// TestJoinOfferedRateOneWorkerInterrupted: 8 requests planned every 0.5 s
// (span 4 s) on two workers; worker 0 offers its 4 (at 0.5, 1.5, 2.5 and
// 3.5 s), worker 1 is interrupted at 1.2 s after offering 1 (at 1 s).
// Offering lasted until worker 0's last offer at 3.5 s: the offered load
// is 5 / 3.5 s, not 5 over the interrupted worker's 1.2 s.
func TestJoinOfferedRateOneWorkerInterrupted(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	req := func(index int) Request {
		at := t0.Add(time.Duration(index+1) * 500 * time.Millisecond)
		return Request{Result: &probe.Result{Seq: uint64(index + 1), Scheduled: at, Sent: at, Disposition: probe.Accepted,
			TTFT: 50 * time.Millisecond, E2EL: 100 * time.Millisecond, OutputTokens: 1}, Ended: at.Add(100 * time.Millisecond)}
	}
	complete := Part{Start: t0, SpanNS: 4 * time.Second, End: t0.Add(3600 * time.Millisecond),
		Requests: []Request{req(0), req(2), req(4), req(6)}}
	interrupted := Part{Start: t0, SpanNS: 4 * time.Second, End: t0.Add(1200 * time.Millisecond),
		Interrupted: true, Stopped: t0.Add(1200 * time.Millisecond), Requests: []Request{req(1)}}
	for _, parts := range [][]Part{{complete, interrupted}, {interrupted, complete}} {
		m := stats.Compute(Join(parts), stats.Options{Percentiles: []float64{99}})
		if want := 5 / 3.5; m.Offered != 5 || math.Abs(m.OfferedRate-want) > 1e-9 {
			t.Errorf("offered %d at %v req/s, want 5 at %v req/s (5 requests over the 3.5 s offering lasted)", m.Offered, m.OfferedRate, want)
		}
	}
}
