package main

// The bench family of commands: bench, capacity and merge. Each is a thin
// shell over package bench, which prints and decides the exit code.

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"github.com/alecthomas/kingpin/v2"

	"github.com/vllm-prober/vllm-prober/bench"
	"github.com/vllm-prober/vllm-prober/config"
)

// benchCommand registers `bench`: a one-shot run with vllm bench serve's
// flags and printed result block, plus the disposition ledger.
func benchCommand(app *kingpin.Application) action {
	cmd := app.Command("bench", "Benchmark a server like `vllm bench serve`, with the prober's judge and ledger.")
	flags := bench.RegisterBenchFlags(cmd)
	return func(ctx context.Context, logger *slog.Logger) int {
		o, err := flags.Options()
		if err == nil {
			var out *bench.Outcome
			out, err = bench.Bench(ctx, o, bench.Env{Stdout: os.Stdout, Progress: os.Stderr, Logger: logger})
			if out != nil && out.ResultPath != "" {
				logger.Info("result saved", "path", out.ResultPath, "ledger", out.Settings.LedgerPath)
			}
		}
		return benchExit("bench", err)
	}
}

// capacityCommand registers `capacity`: a staircase search, with bisection,
// for the highest offered load that meets the pass rule on every repeat.
func capacityCommand(app *kingpin.Application) action {
	cmd := app.Command("capacity", "Find the rated capacity: the highest offered load whose every repeat meets the pass rule.")
	flags := bench.RegisterCapacityFlags(cmd)
	return func(ctx context.Context, logger *slog.Logger) int {
		o, err := flags.Options()
		if err == nil && flags.ConfigFile() != "" {
			o.Config, err = config.Load(flags.ConfigFile())
			if err != nil {
				err = fmt.Errorf("%w: %w", bench.ErrUsage, err)
			}
		}
		if err == nil {
			_, err = bench.Capacity(ctx, o, bench.Env{Stdout: os.Stdout, Progress: os.Stderr, Logger: logger})
		}
		return benchExit("capacity", err)
	}
}

// mergeCommand registers `merge`: the numbers of a sharded bench run, or
// the table and verdict of a sharded capacity search, recomputed from its
// workers' saved results.
func mergeCommand(app *kingpin.Application) action {
	cmd := app.Command("merge", "Merge the saved results of a sharded bench run or capacity search (--shard I/N) into the run's numbers.")
	var o bench.MergeOptions
	cmd.Flag("output", "Write the merged result (vLLM's JSON keys and the prober's; a capacity report, its chart beside it as .svg) to this file.").StringVar(&o.Output)
	cmd.Flag("wait", "Wait up to this long for every result to exist, as a merge step started beside its workers does.").Default("0s").DurationVar(&o.Wait)
	cmd.Arg("result", "The workers' saved results (JSON; capacity's *.shard.json), one per shard.").Required().StringsVar(&o.Results)
	return func(ctx context.Context, logger *slog.Logger) int {
		out, err := bench.Merge(ctx, o, bench.Env{Stdout: os.Stdout, Logger: logger})
		if out != nil && out.ResultPath != "" {
			logger.Info("merged result saved", "path", out.ResultPath)
		}
		return benchExit("merge", err)
	}
}

// benchExit prints a bench-family command's error as bench words it and
// returns the command's exit code (0 when err is nil).
func benchExit(command string, err error) int {
	if err != nil {
		fmt.Fprintln(os.Stderr, bench.Message(command, err))
	}
	return bench.ExitCode(err)
}
