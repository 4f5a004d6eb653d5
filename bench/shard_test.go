package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"maps"
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
	"github.com/vllm-prober/vllm-prober/bench/report"
	"github.com/vllm-prober/vllm-prober/bench/shard"
	"github.com/vllm-prober/vllm-prober/bench/stats"
	"github.com/vllm-prober/vllm-prober/internal/svgchart/svgtest"
	"github.com/vllm-prober/vllm-prober/probe"
	"github.com/vllm-prober/vllm-prober/probe/ledger"
	"github.com/vllm-prober/vllm-prober/probe/ledger/ledgertest"
	"github.com/vllm-prober/vllm-prober/simulator"
)

// runShards runs the n shards of o at once from a common start, as n
// workers do, and returns their outcomes by shard index.
func runShards(t *testing.T, o Options, n int) []*Outcome {
	t.Helper()
	o.StartAt = time.Now().Add(500 * time.Millisecond).UTC()
	outs := make([]*Outcome, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wo := o
		wo.Shard, wo.SaveResult = openloop.Shard{Index: i, Count: n}, true
		wg.Go(func() { outs[i], errs[i] = Bench(context.Background(), wo, Env{}) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("shard %d/%d: %v", i, n, err)
		}
	}
	return outs
}

// ledgerOffsets reads a ledger into each request's planned offset from
// start, by seq, and returns its records.
func ledgerOffsets(t *testing.T, path string, start time.Time, into map[uint64]time.Duration) []ledger.Record {
	t.Helper()
	recs := ledgertest.Read(t, path)
	for _, r := range recs {
		if _, dup := into[r.Seq]; dup {
			t.Errorf("seq %d in two ledgers", r.Seq)
		}
		into[r.Seq] = r.Scheduled.Sub(start)
	}
	return recs
}

// promptTokens maps each record's seq to its prompt length (0 when the
// server failed the request).
func promptTokens(recs []ledger.Record) map[uint64]int {
	m := make(map[uint64]int, len(recs))
	for _, r := range recs {
		m[r.Seq] = r.PromptTokens
	}
	return m
}

// TestShardedBench runs a bench as three workers against the simulator
// and checks the union of their ledgers is a one-process run's schedule,
// request for request, and that merge's numbers are those of the union of
// the workers' requests computed as one run.
func TestShardedBench(t *testing.T) {
	url, sim := startSim(t, nil)
	sim.SetFaults(simulator.Faults{HTTP500: 0.1})
	o := benchTestOptions(url)
	o.NumPrompts, o.RequestRate, o.ResultDir = 60, 200, t.TempDir()
	// Prompt lengths from 8 to 24 tokens: a shard that drew other prompts
	// than one process would shows in the ledger's prompt_tokens.
	o.RandomRangeRatio = 0.5
	single, err := Bench(context.Background(), func() Options { s := o; s.SaveResult = true; return s }(), Env{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[uint64]time.Duration{}
	wantTokens := promptTokens(ledgerOffsets(t, single.Settings.LedgerPath, single.Run.Start, want))

	outs := runShards(t, o, 3)
	t.Run("union of the shard ledgers is the one-process schedule", func(t *testing.T) {
		got := map[uint64]time.Duration{}
		gotTokens := map[uint64]int{}
		for _, out := range outs {
			maps.Copy(gotTokens, promptTokens(ledgerOffsets(t, out.Settings.LedgerPath, out.Run.Start, got)))
		}
		lengths := map[int]bool{}
		for seq, n := range wantTokens {
			if n == 0 || gotTokens[seq] == 0 {
				continue // failed by the simulator's faults: no usage
			}
			lengths[n] = true
			if gotTokens[seq] != n {
				t.Errorf("seq %d sent %d prompt tokens in its shard, %d in one process", seq, gotTokens[seq], n)
			}
		}
		if len(lengths) < 5 {
			t.Errorf("prompt lengths %v: too few distinct lengths to tell prompts apart", lengths)
		}
		if len(got) != len(want) || len(want) != o.NumPrompts {
			t.Fatalf("shards offered %d requests, one process %d, want %d", len(got), len(want), o.NumPrompts)
		}
		for seq, off := range want {
			if got[seq] != off {
				t.Errorf("seq %d planned at %v in the shards, %v in one process", seq, got[seq], off)
			}
		}
	})

	paths := make([]string, len(outs))
	for i, out := range outs {
		paths[i] = out.ResultPath
	}
	t.Run("merge recomputes from every request", func(t *testing.T) {
		var stdout bytes.Buffer
		output := filepath.Join(t.TempDir(), "merged.json")
		merged, err := Merge(context.Background(), MergeOptions{Results: []string{paths[2], paths[0], paths[1]}, Output: output}, Env{Stdout: &stdout})
		if err != nil {
			t.Fatal(err)
		}
		union := &openloop.Run{Start: outs[0].Run.Start, Span: outs[0].Run.Span, Timeout: outs[0].Run.Timeout}
		for _, out := range outs {
			union.Results = append(union.Results, out.Run.Results...)
			union.Ended, union.Queued = append(union.Ended, out.Run.Ended...), append(union.Queued, out.Run.Queued...)
			if out.Run.End.After(union.End) {
				union.End = out.Run.End
			}
		}
		m := stats.Compute(union, stats.Options{Good: o.Goodput.Rule(), Percentiles: o.MetricPercentiles})
		var wantBlock, gotBlock bytes.Buffer
		report.PrintResult(&wantBlock, merged.Settings, m)
		report.PrintResult(&gotBlock, merged.Settings, merged.Metrics)
		if gotBlock.String() != wantBlock.String() || !strings.Contains(stdout.String(), wantBlock.String()) {
			t.Errorf("merged block:\n%s\nwant (the workers' requests as one run):\n%s", gotBlock.String(), wantBlock.String())
		}
		seqs := make([]uint64, len(merged.Run.Results))
		for i, r := range merged.Run.Results {
			seqs[i] = r.Seq
		}
		if len(seqs) != o.NumPrompts || !slices.IsSorted(seqs) || seqs[0] != 1 || seqs[len(seqs)-1] != uint64(o.NumPrompts) {
			t.Errorf("merged seqs %v, want 1..%d in order", seqs, o.NumPrompts)
		}
		accepted := 0
		for _, r := range merged.Run.Results {
			if r.Disposition == probe.Accepted {
				accepted++
			}
		}
		if merged.Metrics.Offered != o.NumPrompts || merged.Metrics.Dispositions[probe.Accepted] != accepted || accepted == o.NumPrompts {
			t.Errorf("merged offered %d accepted %d; want %d offered, %d accepted (some failed by the faults)",
				merged.Metrics.Offered, merged.Metrics.Dispositions[probe.Accepted], o.NumPrompts, accepted)
		}
		for _, line := range []string{"Merged 3 of 3 shards of run ", "Shard 0/3 (", "Send-time skew between workers"} {
			if !strings.Contains(stdout.String(), line) {
				t.Errorf("merge output lacks %q:\n%s", line, stdout.String())
			}
		}
		var doc map[string]any
		if b, err := os.ReadFile(output); err != nil || json.Unmarshal(b, &doc) != nil || doc["completed"] != float64(merged.Metrics.Completed) {
			t.Errorf("merged result %s: %v, completed %v, want %d", output, err, doc["completed"], merged.Metrics.Completed)
		}
	})
	t.Run("merge waits for a result still being written", func(t *testing.T) {
		late := filepath.Join(t.TempDir(), "late.json")
		b, err := os.ReadFile(paths[1])
		if err != nil {
			t.Fatal(err)
		}
		time.AfterFunc(1500*time.Millisecond, func() { _ = report.WriteFile(late, report.Bytes(b)) })
		merged, err := Merge(context.Background(), MergeOptions{Results: []string{paths[0], late, paths[2]}, Wait: time.Minute}, Env{})
		if err != nil || merged.Metrics.Offered != o.NumPrompts {
			t.Fatalf("merge with --wait: %v", err)
		}
		if _, err := Merge(context.Background(), MergeOptions{Results: []string{paths[0], late + ".never"}, Wait: time.Second}, Env{}); !errors.Is(err, ErrUsage) || !strings.Contains(err.Error(), "late.json.never") {
			t.Errorf("merge of a result never written: %v, want an error naming it", err)
		}
	})
	t.Run("refusals", func(t *testing.T) {
		foreign := filepath.Join(t.TempDir(), "foreign.json")
		b, _ := os.ReadFile(paths[1])
		var doc map[string]any
		if err := json.Unmarshal(b, &doc); err != nil {
			t.Fatal(err)
		}
		doc["shard"].(map[string]any)["run_id"] = "0000000000000000"
		b, _ = json.Marshal(doc)
		if err := os.WriteFile(foreign, b, 0o644); err != nil {
			t.Fatal(err)
		}
		tests := []struct {
			name    string
			results []string
			want    error
			text    string
		}{
			{"different runs", []string{paths[0], foreign}, ErrUsage, "refusing to merge shards of different runs"},
			{"same shard twice", []string{paths[0], paths[0]}, ErrUsage, "are both shard 0/3 of run"},
			{"not sharded", []string{single.ResultPath}, ErrUsage, "not a sharded bench result"},
			{"missing shard", []string{paths[0], paths[2]}, ErrMissingShards, "missing shards 1/3 of run"},
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				_, err := Merge(context.Background(), MergeOptions{Results: tc.results}, Env{})
				if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.text) {
					t.Errorf("err = %v, want %v with %q", err, tc.want, tc.text)
				}
			})
		}
	})
}

func TestBenchFlagsShard(t *testing.T) {
	tests := []struct {
		name      string
		args      []string
		wantShard openloop.Shard
		wantErr   string
	}{
		{name: "none", args: nil},
		{name: "one of two", args: []string{"--shard", "1/2", "--start-at", "2026-01-02T15:04:05Z"}, wantShard: openloop.Shard{Index: 1, Count: 2}},
		{name: "one of one needs no start", args: []string{"--shard", "0/1"}, wantShard: openloop.Shard{Index: 0, Count: 1}},
		{name: "index out of range", args: []string{"--shard", "2/2", "--start-at", "2026-01-02T15:04:05Z"},
			wantErr: `invalid arguments: --shard "2/2": want I/N with 0 <= I < N, e.g. 0/4`},
		{name: "not a fraction", args: []string{"--shard", "3"}, wantErr: `invalid arguments: --shard "3": want I/N with 0 <= I < N, e.g. 0/4`},
		{name: "no common start", args: []string{"--shard", "0/3"}, wantErr: "invalid arguments: --shard 0/3 needs --start-at, the workers' common start"},
		{name: "bad start", args: []string{"--start-at", "tomorrow"},
			wantErr: `invalid arguments: --start-at "tomorrow": want an RFC 3339 time, e.g. 2026-01-02T15:04:05Z`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o, err := parseBench(tc.args...)
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr || !errors.Is(err, ErrUsage) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if o.Shard != tc.wantShard || o.SaveResult != o.sharded() {
				t.Errorf("shard %+v save-result %v, want %+v and save-result when sharded", o.Shard, o.SaveResult, tc.wantShard)
			}
		})
	}
}

// TestShardRunID checks that workers started with the same flags share a
// run id, and that a different schedule or start gives another.
func TestShardRunID(t *testing.T) {
	start := time.Date(2026, 1, 2, 15, 4, 5, 0, time.UTC)
	base := Options{BaseURL: "http://h:1", NumPrompts: 10, RequestRate: 5, Seed: 1, StartAt: start, Shard: openloop.Shard{Index: 0, Count: 2}}
	other := base
	other.Shard.Index = 1
	if runID(&base) != runID(&other) {
		t.Errorf("shards 0/2 and 1/2 of one run have run ids %s and %s", runID(&base), runID(&other))
	}
	for name, edit := range map[string]func(*Options){
		"seed":   func(o *Options) { o.Seed = 2 },
		"start":  func(o *Options) { o.StartAt = start.Add(time.Second) },
		"count":  func(o *Options) { o.Shard.Count = 3 },
		"rate":   func(o *Options) { o.RequestRate = 6 },
		"prompt": func(o *Options) { o.NumPrompts = 11 },
	} {
		o := base
		edit(&o)
		if runID(&o) == runID(&base) {
			t.Errorf("a different %s gives the same run id", name)
		}
	}
}

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
