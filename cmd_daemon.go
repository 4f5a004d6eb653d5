package main

import (
	"context"
	"log/slog"

	"github.com/alecthomas/kingpin/v2"
)

func daemonCommand(app *kingpin.Application) action {
	app.Command("run", "TODO")
	return func(ctx context.Context, logger *slog.Logger) int {
		logger.Error("not implemented")
		return 1
	}
}
