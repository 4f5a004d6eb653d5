package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"github.com/alecthomas/kingpin/v2"

	"github.com/vllm-prober/vllm-prober/bench"
)

// mergeCommand registers `merge`: the numbers of a sharded bench run
// recomputed from its workers' saved results.
func mergeCommand(app *kingpin.Application) action {
	cmd := app.Command("merge", "Merge the saved results of a sharded bench run (bench --shard I/N) into the run's numbers.")
	var o bench.MergeOptions
	cmd.Flag("output", "Write the merged result (vLLM's JSON keys and the prober's) to this file.").StringVar(&o.Output)
	cmd.Flag("wait", "Wait up to this long for every result to exist, as a merge step started beside its workers does.").Default("0s").DurationVar(&o.Wait)
	cmd.Arg("result", "The workers' saved results (JSON), one per shard.").Required().StringsVar(&o.Results)
	return func(ctx context.Context, logger *slog.Logger) int {
		out, err := bench.Merge(ctx, o, bench.Env{Stdout: os.Stdout, Logger: logger})
		if out != nil && out.ResultPath != "" {
			logger.Info("merged result saved", "path", out.ResultPath)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, bench.Message("merge", err))
		}
		return bench.ExitCode(err)
	}
}
