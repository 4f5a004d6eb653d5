package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"github.com/alecthomas/kingpin/v2"

	"github.com/vllm-prober/vllm-prober/bench"
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
		if err != nil {
			fmt.Fprintln(os.Stderr, bench.Message("bench", err))
		}
		return bench.ExitCode(err)
	}
}
