package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"github.com/alecthomas/kingpin/v2"

	"github.com/vllm-prober/vllm-prober/bench"
	"github.com/vllm-prober/vllm-prober/config"
)

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
		if err != nil {
			fmt.Fprintln(os.Stderr, bench.Message("capacity", err))
		}
		return bench.ExitCode(err)
	}
}
