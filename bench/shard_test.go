package bench

import (
	"errors"
	"testing"
	"time"

	"github.com/vllm-prober/vllm-prober/bench/openloop"
)

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
