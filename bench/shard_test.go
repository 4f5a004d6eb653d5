package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vllm-prober/vllm-prober/bench/openloop"
	"github.com/vllm-prober/vllm-prober/bench/report"
	"github.com/vllm-prober/vllm-prober/bench/stats"
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
