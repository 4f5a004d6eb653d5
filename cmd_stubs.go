//go:build !wiring

package main

import (
	"context"
	"log/slog"

	"github.com/alecthomas/kingpin/v2"
)

func daemonCommand(app *kingpin.Application) action {
	app.Command("run", "Run the prober daemon (the default command).").Default()
	return func(context.Context, *slog.Logger) int { return 1 }
}

func demoCommand(app *kingpin.Application) action {
	app.Command("demo", "Run the daemon against the embedded simulator.")
	return func(context.Context, *slog.Logger) int { return 1 }
}
