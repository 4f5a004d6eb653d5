package bench

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/vllm-prober/vllm-prober/bench/openloop"
	"github.com/vllm-prober/vllm-prober/bench/shard"
)

// parseShard parses --shard I/N (shard.Parse); errors wrap ErrUsage.
func parseShard(s string) (openloop.Shard, error) {
	sh, err := shard.Parse(s)
	if err != nil {
		return sh, fmt.Errorf("%w: %w", ErrUsage, err)
	}
	return sh, nil
}

// parseStartAt parses --start-at, an RFC 3339 time; "" is none.
func parseStartAt(s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, usageErr("--start-at %q: want an RFC 3339 time, e.g. 2026-01-02T15:04:05Z", s)
	}
	return t, nil
}

// sharded reports whether o runs one shard of a schedule split among
// workers.
func (o *Options) sharded() bool { return o.Shard.Count > 1 }

// runID identifies a sharded run: a hash of everything that makes the
// workers' schedule and requests the same (the common start, the shard
// count, the arrival process, the dataset, the server and API), so shards
// of different runs, or of workers started with different flags, do not
// merge.
func runID(o *Options) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s|%d|%d|%d|%v|%v|%s|%s|%d|%d|%v|%s|%s|%s|%s|%d|%d",
		o.StartAt.UTC().Format(time.RFC3339Nano), o.Shard.Count, o.Seed, o.NumPrompts, o.RequestRate, o.Burstiness,
		o.DatasetName, o.DatasetPath, o.RandomInputLen, o.RandomOutputLen, o.RandomRangeRatio,
		o.BaseURL, o.Endpoint, o.Backend, o.Model, o.MaxConcurrency, o.RandomPrefixLen)
	return hex.EncodeToString(h.Sum(nil))[:16]
}
