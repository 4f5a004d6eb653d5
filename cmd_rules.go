package main

import (
	"context"
	"log/slog"

	"github.com/alecthomas/kingpin/v2"
)

func rulesCommand(app *kingpin.Application) action {
	app.Command("rules", "TODO")
	return func(ctx context.Context, logger *slog.Logger) int {
		logger.Error("not implemented")
		return 1
	}
}
