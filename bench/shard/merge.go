package shard

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"time"

	"github.com/vllm-prober/vllm-prober/bench/openloop"
	"github.com/vllm-prober/vllm-prober/bench/stats"
	"github.com/vllm-prober/vllm-prober/internal/quantile"
)

// Result is one worker's saved result as merge reads it: its path, its
// file (*File of a bench worker, *CapacityFile of a capacity worker) and
// its shard.
type Result[F any] struct {
	Path  string
	File  F
	Shard openloop.Shard
}

// ReadResults reads bench workers' results and checks they are shards of
// one run, each given once.
func ReadResults(paths []string) ([]Result[*File], error) {
	if len(paths) == 0 {
		return nil, errors.New("no results to merge")
	}
	return readResults(paths, "shard.shard", func(path string) (*File, string, string, error) {
		f, err := readFile(path)
		if err != nil {
			return nil, "", "", err
		}
		return f, f.RunID, f.Shard, nil
	})
}

// readResults reads each result with read, which returns its file, run
// id and shard (I/N), and checks it joins the results read before it;
// field names the shard in the file for errors.
func readResults[F any](paths []string, field string, read func(string) (F, string, string, error)) ([]Result[F], error) {
	var out []Result[F]
	var ids []id
	for _, p := range paths {
		f, runID, shard, err := read(p)
		if err != nil {
			return nil, err
		}
		x, err := check(ids, id{path: p, runID: runID, shard: shard}, field)
		if err != nil {
			return nil, err
		}
		ids = append(ids, x)
		out = append(out, Result[F]{Path: p, File: f, Shard: x.parsed})
	}
	return out, nil
}

// id is how a saved shard result names its run and its part.
type id struct {
	path, runID, shard string // shard as I/N
	parsed             openloop.Shard
}

// check parses x's shard (field names it for the error) and checks it
// joins the shards read before it: the same run, the same shard count,
// not one of them.
func check(prev []id, x id, field string) (id, error) {
	sh, err := Parse(x.shard)
	if err != nil {
		return x, fmt.Errorf("%s: %s: %w", x.path, field, err)
	}
	x.parsed = sh
	if len(prev) == 0 {
		return x, nil
	}
	if first := prev[0]; x.runID != first.runID {
		return x, fmt.Errorf("%s is of run %s, %s of run %s: refusing to merge shards of different runs",
			x.path, x.runID, first.path, first.runID)
	} else if sh.Count != first.parsed.Count {
		return x, fmt.Errorf("%s is shard %s, %s is shard %s: the shard counts differ", x.path, x.shard, first.path, first.shard)
	}
	for _, o := range prev {
		if o.parsed == sh {
			return x, fmt.Errorf("%s and %s are both shard %s of run %s", o.path, x.path, x.shard, x.runID)
		}
	}
	return x, nil
}

// readFile reads the "shard" block of a bench worker's result.
func readFile(path string) (*File, error) {
	var doc struct {
		Shard *File `json:"shard"`
	}
	if err := decode(path, &doc); err != nil {
		return nil, err
	}
	if doc.Shard == nil || doc.Shard.RunID == "" {
		return nil, fmt.Errorf("%s: not a sharded bench result (no \"shard\" block with a run_id; run bench with --shard I/N)", path)
	}
	for i, r := range doc.Shard.Requests {
		if r.Result == nil {
			return nil, fmt.Errorf("%s: shard.requests[%d] has no result", path, i)
		}
	}
	return doc.Shard, nil
}

// decode reads the JSON file at path into doc; errors name the file.
func decode(path string, doc any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, doc); err != nil {
		return fmt.Errorf("%s: %v", path, err)
	}
	return nil
}

// Join joins the workers' parts of one run into one Run in planned order,
// as one process running the whole schedule would have recorded it. The
// run is interrupted when a worker was; offering then stopped with the
// last worker to offer: an interrupted worker at its Stopped, one that
// offered all its requests at its last planned send.
func Join(parts []Part) *openloop.Run {
	run := &openloop.Run{Start: parts[0].Start, Span: parts[0].SpanNS, Timeout: parts[0].TimeoutNS}
	var reqs []Request
	var stopped time.Time
	for _, p := range parts {
		reqs = append(reqs, p.Requests...)
		if p.End.After(run.End) {
			run.End = p.End
		}
		if p.Interrupted {
			run.Interrupted = true
			if p.Stopped.After(stopped) {
				stopped = p.Stopped
			}
			continue
		}
		for _, r := range p.Requests {
			if r.Result.Scheduled.After(stopped) {
				stopped = r.Result.Scheduled
			}
		}
	}
	if run.Interrupted {
		run.Stopped = stopped
	}
	slices.SortFunc(reqs, func(a, b Request) int { return cmp.Compare(a.Result.Seq, b.Result.Seq) })
	for _, r := range reqs {
		run.Results, run.Ended, run.Queued = append(run.Results, r.Result), append(run.Ended, r.Ended), append(run.Queued, r.QueuedNS)
	}
	return run
}

// Missing names the shards of the results' run not among them, as I/N.
func Missing[F any](results []Result[F]) []string {
	n := results[0].Shard.Count
	var missing []string
	for i := range n {
		if !slices.ContainsFunc(results, func(r Result[F]) bool { return r.Shard.Index == i }) {
			missing = append(missing, String(openloop.Shard{Index: i, Count: n}))
		}
	}
	return missing
}

// Skew is what PrintSkew reports of one worker: its shard (I/N), its
// result and the requests it offered.
type Skew struct {
	Shard, Path string
	Requests    []Request
}

// PrintSkew prints each worker's send lag (send time minus planned time,
// on its own clock) and the spread of their medians: the send-time skew
// between workers the results show. An offset between the machines'
// clocks is invisible to their own timestamps; only synchronised clocks
// (NTP) rule it out.
func PrintSkew(w io.Writer, shards []Skew) {
	var medians []float64
	for _, sh := range shards {
		var lags []float64
		for _, r := range sh.Requests {
			if !r.Result.Sent.IsZero() {
				lags = append(lags, stats.Milliseconds(r.Result.Lag))
			}
		}
		slices.Sort(lags)
		p50, p99 := quantile.NearestRank(lags, 0.5), quantile.NearestRank(lags, 0.99)
		if len(lags) > 0 {
			medians = append(medians, p50)
		}
		fmt.Fprintf(w, "Shard %s (%s): %d requests, %d sent, send lag p50 %.3f ms, p99 %.3f ms\n",
			sh.Shard, sh.Path, len(sh.Requests), len(lags), p50, p99)
	}
	if len(medians) > 1 {
		fmt.Fprintf(w, "Send-time skew between workers (spread of median send lag): %.3f ms\n", slices.Max(medians)-slices.Min(medians))
	}
	fmt.Fprintln(w, "Clock offset between machines is not visible in their own timestamps: keep the workers' clocks synchronised (NTP).")
}
