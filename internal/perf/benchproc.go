package perf

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/vllm-prober/vllm-prober/internal/perf/proc"
	"github.com/vllm-prober/vllm-prober/probe/ledger"
)

// BenchProcessesResult is the send lag (send time - planned time) of
// `vllm-prober bench` run as processes against a simulator process: one
// process offering the whole schedule, and the same schedule split among
// two worker processes (--shard 0/2 and 1/2) from a common --start-at.
type BenchProcessesResult struct {
	Rate    float64
	Offered int
	One     Stats    // the one process
	Workers Stats    // both workers' requests together
	Worker  [2]Stats // each worker's
}

// BenchProcesses runs binary's bench at rate requests/s for d, first as
// one process, then as two --shard worker processes, against one
// simulator process, and reads each request's lag from the ledgers.
func BenchProcesses(ctx context.Context, binary string, rate float64, d time.Duration) (BenchProcessesResult, error) {
	n := int(rate * d.Seconds())
	out := BenchProcessesResult{Rate: rate, Offered: n}
	dir, err := os.MkdirTemp("", "vllm-prober-perf-workers-")
	if err != nil {
		return out, err
	}
	defer os.RemoveAll(dir)
	sim, err := proc.Start(ctx, binary, proc.SimulatorReady, "simulate", "--web.listen-address=127.0.0.1:0", "--jitter=0",
		"--max-num-seqs=1024", "--decode-per-seq=20us")
	if err != nil {
		return out, fmt.Errorf("simulator: %w", err)
	}
	defer sim.Stop()
	// run starts one bench process per shard (none: one unsharded process)
	// from a common start and returns each one's lags.
	run := func(name string, shards int) ([][]time.Duration, error) {
		at := time.Now().Add(3 * time.Second).UTC().Format(time.RFC3339Nano)
		procs := max(shards, 1)
		lags, errs := make([][]time.Duration, procs), make([]error, procs)
		var wg sync.WaitGroup
		for i := range procs {
			file := fmt.Sprintf("%s-%d.json", name, i)
			args := []string{"bench", "--base-url=http://" + sim.Addr, "--random-input-len=32", "--random-output-len=8",
				"--num-prompts=" + strconv.Itoa(n), "--request-rate=" + strconv.FormatFloat(rate, 'g', -1, 64), "--seed=1",
				"--start-at=" + at, "--save-result", "--result-dir=" + dir, "--result-filename=" + file}
			if shards > 0 {
				args = append(args, fmt.Sprintf("--shard=%d/%d", i, shards))
			}
			wg.Go(func() {
				if b, err := exec.CommandContext(ctx, binary, args...).CombinedOutput(); err != nil {
					errs[i] = fmt.Errorf("bench %s: %w\n%s", file, err, b)
					return
				}
				lags[i], errs[i] = ledgerLags(filepath.Join(dir, file[:len(file)-len(".json")]+".ledger.jsonl"))
			})
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				return nil, err
			}
		}
		return lags, nil
	}
	one, err := run("one", 0)
	if err != nil {
		return out, err
	}
	workers, err := run("worker", 2)
	if err != nil {
		return out, err
	}
	out.One = Summarize(one[0])
	out.Worker[0], out.Worker[1] = Summarize(workers[0]), Summarize(workers[1])
	out.Workers = Summarize(append(workers[0], workers[1]...))
	return out, nil
}

// ledgerLags reads the send lag of every sent request of a ledger.
func ledgerLags(path string) ([]time.Duration, error) {
	recs, torn, err := ledger.Read(path)
	if err != nil {
		return nil, err
	}
	if torn != 0 {
		return nil, fmt.Errorf("%s: %d torn lines", path, torn)
	}
	var lags []time.Duration
	for _, r := range recs {
		if r.Sent != nil {
			lags = append(lags, r.Sent.Sub(r.Scheduled))
		}
	}
	return lags, nil
}
