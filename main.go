// Command vllm-prober sends low-rate, open-loop streaming probes to vLLM's
// OpenAI-compatible endpoints, judges every request against a written
// contract and exports what a client sees as Prometheus metrics.
package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/alecthomas/kingpin/v2"
	"github.com/prometheus/common/promslog"
	promslogflag "github.com/prometheus/common/promslog/flag"
	"github.com/prometheus/common/version"

	"github.com/vllm-prober/vllm-prober/internal/logfilter"
)

const appName = "vllm-prober"

// defaultCommandFlagsTemplate adds the default command's flags to the
// top-level help, so `vllm-prober --help` shows the daemon's flags.
const defaultCommandFlagsTemplate = `{{if not .Context.SelectedCommand}}{{range .App.Commands}}{{if .Default}}
Flags of the default command "{{.Name}}":
{{.Flags|FlagsToTwoColumns|FormatTwoColumns}}
{{end}}{{end}}{{end}}`

// action runs a parsed subcommand and returns the process exit code. ctx is
// cancelled on SIGINT/SIGTERM.
type action func(ctx context.Context, logger *slog.Logger) int

func main() { os.Exit(run(os.Args[1:])) }

func run(args []string) int {
	app := kingpin.New(appName, "Probes vLLM endpoints the way clients see them and exports the results to Prometheus.")
	app.HelpFlag.Short('h')
	app.UsageTemplate(kingpin.DefaultUsageTemplate + defaultCommandFlagsTemplate)
	app.Version(version.Print(appName))
	promslogConfig := &promslog.Config{}
	promslogflag.AddFlags(app, promslogConfig)

	actions := map[string]action{}
	register := func(name string, a action) { actions[name] = a }
	register("run", daemonCommand(app))
	register("demo", demoCommand(app))
	register("simulate", simulateCommand(app))
	register("bench", benchCommand(app))
	register("capacity", capacityCommand(app))
	register("merge", mergeCommand(app))
	register("rules", rulesCommand(app))

	cmd, err := app.Parse(args)
	if err != nil {
		app.Usage(nil)
		fmt.Fprintf(os.Stderr, "%s: error: %v\n", appName, nameBadFlag(app, args, err))
		return 2
	}
	// Every message passes through logfilter: URL secrets are redacted and
	// repeated warnings are rate-limited.
	logger := slog.New(logfilter.New(promslog.New(promslogConfig).Handler(), logfilter.Options{}))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return actions[cmd](ctx, logger)
}

// nameBadFlag adds the flag to a value error, since kingpin reports a bad
// number or duration without saying which flag held it.
func nameBadFlag(app *kingpin.Application, args []string, err error) error {
	pc, perr := app.ParseContext(args)
	if perr != nil || pc == nil {
		return err
	}
	for _, e := range pc.Elements {
		f, ok := e.Clause.(*kingpin.FlagClause)
		if ok && e.Value != nil && *e.Value != "" && strings.Contains(err.Error(), *e.Value) {
			return fmt.Errorf("--%s=%s: %w", f.Model().Name, *e.Value, err)
		}
	}
	return err
}
