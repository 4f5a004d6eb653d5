package bench

import (
	"bytes"
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vllm-prober/vllm-prober/bench/capacity"
	"github.com/vllm-prober/vllm-prober/bench/openloop"
	"github.com/vllm-prober/vllm-prober/bench/shard"
	"github.com/vllm-prober/vllm-prober/bench/stats"
	"github.com/vllm-prober/vllm-prober/internal/svgchart/svgtest"
	"github.com/vllm-prober/vllm-prober/probe"
	"github.com/vllm-prober/vllm-prober/probe/ledger"
)

// planned is where a ledger puts a request of a fixed staircase: its
// level, repeat and planned offset from the staircase's start.
type planned struct {
	level  float64
	repeat int
	offset time.Duration
}

// staircaseLedger reads a capacity ledger into each request's place, by
// seq, and returns its records.
func staircaseLedger(t *testing.T, path string, start time.Time, into map[uint64]planned) []ledger.Record {
	t.Helper()
	offsets := map[uint64]time.Duration{}
	recs := ledgerOffsets(t, path, start, offsets)
	for _, r := range recs {
		if _, dup := into[r.Seq]; dup || r.Level == nil || r.Repeat == nil {
			t.Fatalf("%s: seq %d seen before, or without a level or repeat", path, r.Seq)
		}
		into[r.Seq] = planned{*r.Level, *r.Repeat, offsets[r.Seq]}
	}
	return recs
}

// TestShardedCapacity runs a fixed staircase as one process and as three
// workers against the simulator: the union of the workers' ledgers is the
// one process's schedule, request for request, and merge's table, verdict
// and report are those of the union of the workers' requests, checked
// against a hand count of their ledgers.
func TestShardedCapacity(t *testing.T) {
	url := saturatingSim(t)
	w := benchTestOptions(url)
	w.RandomInputLen, w.RandomOutputLen, w.Timeout = 32, 8, time.Second
	w.Goodput = stats.Goodput{E2EL: 150 * time.Millisecond, HasE2EL: true}
	o := CapacityOptions{Workload: w, Rates: []float64{20, 200}, Repeats: 2, Duration: 500 * time.Millisecond,
		Warmup: 200 * time.Millisecond, Drain: 300 * time.Millisecond, Burstiness: 1, Seed: 3,
		Rule: capacity.PassRule{MinAcceptance: 0.9, Percentile: 99}, RuleFromProbe: true}

	single := o
	single.Workload.StartAt, single.OutputDir, single.Stamp = time.Now().Add(300*time.Millisecond), t.TempDir(), "one"
	one, err := Capacity(context.Background(), single, Env{})
	if err != nil {
		t.Fatal(err)
	}
	if len(one.Search.Repeats) != 4 || one.ShardPath != "" {
		t.Fatalf("one process ran %d repeats (shard result %q), want the 4 of the fixed staircase", len(one.Search.Repeats), one.ShardPath)
	}
	want := map[uint64]planned{}
	staircaseLedger(t, one.LedgerOf, single.Workload.StartAt, want)

	const n = 3
	start := time.Now().Add(500 * time.Millisecond)
	dir := t.TempDir()
	outs := make([]*CapacityOutcome, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wo := o
		wo.Workload.StartAt, wo.Workload.Shard, wo.OutputDir, wo.Stamp = start, openloop.Shard{Index: i, Count: n}, dir, "s"
		wg.Go(func() { outs[i], errs[i] = Capacity(context.Background(), wo, Env{}) })
	}
	wg.Wait()
	got := map[uint64]planned{}
	var recs []ledger.Record
	paths := make([]string, n)
	for i, err := range errs {
		if err != nil {
			t.Fatalf("shard %d/%d: %v", i, n, err)
		}
		recs = append(recs, staircaseLedger(t, outs[i].LedgerOf, start, got)...)
		paths[i] = outs[i].ShardPath
	}
	t.Run("union of the shard ledgers is the one-process schedule", func(t *testing.T) {
		if len(got) != len(want) || len(want) == 0 {
			t.Fatalf("shards offered %d measured requests, one process %d", len(got), len(want))
		}
		for seq, p := range want {
			if got[seq] != p {
				t.Errorf("seq %d planned at %+v in the shards, %+v in one process", seq, got[seq], p)
			}
		}
	})

	var stdout bytes.Buffer
	output := filepath.Join(t.TempDir(), "merged.json")
	if _, err := Merge(context.Background(), MergeOptions{Results: []string{paths[1], paths[2], paths[0]}, Output: output},
		Env{Stdout: &stdout}); err != nil {
		t.Fatal(err)
	}
	merged, err := mergeCapacity(context.Background(), MergeOptions{Results: paths}, Env{Stdout: &bytes.Buffer{}})
	if err != nil {
		t.Fatal(err)
	}
	s := merged.Search
	t.Run("each repeat is the hand count of the union of the ledgers", func(t *testing.T) {
		type count struct{ offered, accepted int }
		byRun := map[runKey]count{}
		for _, r := range recs {
			k := runKey{*r.Level, *r.Repeat - 1}
			c := byRun[k]
			c.offered++
			if r.Disposition == probe.Accepted {
				c.accepted++
			}
			byRun[k] = c
		}
		if len(s.Repeats) != len(byRun) || len(s.Repeats) != 4 {
			t.Fatalf("merged %d repeats, the ledgers have %d runs, want 4", len(s.Repeats), len(byRun))
		}
		rated, failed := 0.0, false
		for _, r := range s.Repeats {
			c := byRun[runKey{r.Rate, r.Index}]
			m := r.Metrics
			if m.Offered != c.offered || m.Dispositions[probe.Accepted] != c.accepted {
				t.Errorf("level %v repeat %d: merged offered %d accepted %d, ledgers %d and %d",
					r.Rate, r.Index+1, m.Offered, m.Dispositions[probe.Accepted], c.offered, c.accepted)
			}
			if acc := float64(c.accepted) / float64(c.offered); acc < 0.9 && r.Pass {
				t.Errorf("level %v repeat %d passes with a hand-counted acceptance of %v", r.Rate, r.Index+1, acc)
			}
		}
		for _, rate := range o.Rates {
			pass := !slices.ContainsFunc(s.Repeats, func(r capacity.Repeat) bool { return r.Rate == rate && !r.Pass })
			if !pass {
				failed = true
			}
			if pass && !failed {
				rated = rate
			}
		}
		if s.Rated != rated {
			t.Errorf("rated %v, want %v (the highest level below the first failing one)", s.Rated, rated)
		}
		if !s.Saturated || rated != 20 {
			t.Logf("the simulator did not saturate as expected: rated %v saturated %v", s.Rated, s.Saturated)
		}
	})
	t.Run("table and verdict are the union's computed as one run", func(t *testing.T) {
		results, err := shard.ReadCapacityResults(paths)
		if err != nil {
			t.Fatal(err)
		}
		files := make([]*shard.CapacityFile, n)
		for i, r := range results {
			files[i] = r.File
		}
		level := func(_ context.Context, rate float64, repeat int) (stats.Metrics, error) {
			var union *openloop.Run
			for _, f := range files {
				i := slices.IndexFunc(f.Runs, func(r shard.CapacityRun) bool { return r.Rate == rate && r.Repeat == repeat })
				p := f.Runs[i]
				if union == nil {
					union = &openloop.Run{Start: p.Start, Span: p.SpanNS, Timeout: p.TimeoutNS}
				}
				for j, r := range p.Requests {
					union.Results = append(union.Results, r.Result)
					union.Ended, union.Queued = append(union.Ended, r.Ended), append(union.Queued, p.Requests[j].QueuedNS)
				}
				if p.End.After(union.End) {
					union.End = p.End
				}
			}
			return stats.Compute(union, stats.Options{Percentiles: []float64{50, 99}}), nil
		}
		ws, err := capacity.Run(context.Background(), capacity.Options{Rates: o.Rates, Repeats: o.Repeats, Order: capacity.OrderInterleaved,
			Seed: o.Seed, Rule: files[0].Rule, Fixed: true}, level)
		if err != nil {
			t.Fatal(err)
		}
		var table bytes.Buffer
		capacity.PrintTable(&table, ws, files[0].Rule)
		capacity.PrintVerdict(&table, ws)
		if !strings.Contains(stdout.String(), table.String()) {
			t.Errorf("merge printed:\n%s\nwant the union's table and verdict:\n%s", stdout.String(), table.String())
		}
		c := readCapacityJSON(t, output)
		if c.RatedCapacity != ws.Rated || len(c.Levels) != 4 {
			t.Errorf("merged report: rated %v with %d repeats, want %v and 4", c.RatedCapacity, len(c.Levels), ws.Rated)
		}
		b, err := os.ReadFile(strings.TrimSuffix(output, ".json") + ".svg")
		if err != nil {
			t.Fatal(err)
		}
		svgtest.Doc(t, b)
		for _, line := range []string{"Merged 3 of 3 shards of capacity search ", "Shard 2/3 (", "Pass rule: each of 2 repeats has"} {
			if !strings.Contains(stdout.String(), line) {
				t.Errorf("merge output lacks %q", line)
			}
		}
	})
	t.Run("refusals", func(t *testing.T) {
		for _, tc := range []struct {
			name    string
			results []string
			want    error
			text    string
		}{
			{"missing shard", []string{paths[0], paths[2]}, ErrMissingShards, "missing shards 1/3 of capacity search"},
			{"same shard twice", []string{paths[1], paths[1]}, ErrUsage, "are both shard 1/3 of run"},
			{"not a capacity shard", []string{paths[0], one.JSONPath}, ErrUsage, "not a sharded capacity result"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				_, err := Merge(context.Background(), MergeOptions{Results: tc.results}, Env{Stdout: &bytes.Buffer{}})
				if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.text) {
					t.Errorf("err = %v, want %v with %q", err, tc.want, tc.text)
				}
			})
		}
	})
	t.Run("a late worker refuses", func(t *testing.T) {
		wo := o
		late := time.Now().Add(-time.Second)
		wo.Workload.StartAt, wo.Workload.Shard, wo.OutputDir = late, openloop.Shard{Index: 0, Count: n}, t.TempDir()
		out, err := Capacity(context.Background(), wo, Env{})
		if !errors.Is(err, errLate) || !strings.Contains(err.Error(), "in the past") || out.Search == nil || len(out.Search.Repeats) != 0 {
			t.Errorf("late worker: %v, want it to refuse its first run", err)
		}
		// Every worker names its files after the common start.
		if want := filepath.Join(wo.OutputDir, "capacity-"+late.UTC().Format("20060102-150405")+"-shard0of3.shard.json"); out.ShardPath != want {
			t.Errorf("shard result %s, want %s", out.ShardPath, want)
		}
	})
}

// TestCapacityShardFileRoundTrip writes a shard result of constant gaps
// (burstiness inf, which JSON has no number for) and reads it back.
func TestCapacityShardFileRoundTrip(t *testing.T) {
	o := CapacityOptions{Rates: []float64{2, 4}, Repeats: 1, Order: capacity.OrderAscending, Burstiness: math.Inf(1),
		Rule: capacity.PassRule{MinAcceptance: 0.99, Percentile: 99.9, TTFT: time.Second}}
	o.Workload.StartAt, o.Workload.Shard = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), openloop.Shard{Index: 1, Count: 2}
	f := fixedStaircase(&bytes.Buffer{}, &o, capacity.Header{Burstiness: math.Inf(1), Seed: 4, Rule: o.Rule.String()})
	path := filepath.Join(t.TempDir(), "s.shard.json")
	if err := shard.WriteCapacity(path, f); err != nil {
		t.Fatal(err)
	}
	results, err := shard.ReadCapacityResults([]string{path})
	if err != nil {
		t.Fatal(err)
	}
	if got := results[0].File; !math.IsInf(got.Header.Burstiness, 1) || got.Header.Seed != 4 || got.Rule != o.Rule || got.Shard != "1/2" ||
		!slices.Equal(got.Percentiles, []float64{50, 99.9}) || !shard.IsCapacity(path) {
		t.Errorf("read back %+v", got)
	}
	b, _ := os.ReadFile(path)
	if err := os.WriteFile(path, bytes.Replace(b, []byte(`"burstiness":"+Inf"`), []byte(`"burstiness":"x"`), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Merge(context.Background(), MergeOptions{Results: []string{path}}, Env{}); !errors.Is(err, ErrUsage) || !strings.Contains(err.Error(), "capacity_shard.burstiness") {
		t.Errorf("bad burstiness: %v, want a usage error naming the field", err)
	}
}
