package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strconv"

	"github.com/alecthomas/kingpin/v2"
	"github.com/prometheus/common/promslog"
	"github.com/prometheus/exporter-toolkit/web"
	"github.com/prometheus/exporter-toolkit/web/kingpinflag"

	"github.com/vllm-prober/vllm-prober/collector/server"
	"github.com/vllm-prober/vllm-prober/config"
	"github.com/vllm-prober/vllm-prober/probe/client"
)

// daemonFlags are the flags of the daemon (`run`, the default command).
type daemonFlags struct {
	configFile      string
	configCheck     bool
	telemetryPath   string
	enableLifecycle bool
	web             *web.FlagConfig
	// maxServerSeries caps the server series re-exported per target; 0 =
	// server.DefaultMaxSeriesPerTarget.
	maxServerSeries int
	// webLimits bound the web server's connections (webserver.go).
	webLimits webLimits
	// dnsServer is the host:port of the DNS server dns discovery asks
	// instead of the system's; "" = the system's. Hidden: it exists for
	// the end-to-end tests, which serve their own records.
	dnsServer string
}

func daemonCommand(app *kingpin.Application) action {
	cmd := app.Command("run", "Run the prober daemon (the default command).").Default()
	f := &daemonFlags{}
	cmd.Flag("config.file", "Prober configuration file.").Default("vllm-prober.yml").StringVar(&f.configFile)
	cmd.Flag("config.check", "Validate the configuration file, print what is wrong and exit 0 (valid) or 1.").BoolVar(&f.configCheck)
	cmd.Flag("server-metrics.max-series-per-target", "Most server series re-exported per target; past it series are dropped and counted in vllm_prober_server_series_dropped_total.").
		Default(strconv.Itoa(server.DefaultMaxSeriesPerTarget)).IntVar(&f.maxServerSeries)
	cmd.Flag("discovery.dns-server", "host:port of the only DNS server dns discovery asks, instead of the system's (for tests).").
		Hidden().StringVar(&f.dnsServer)
	addWebFlags(cmd, f, ":9478")
	return func(ctx context.Context, logger *slog.Logger) int {
		if f.configCheck {
			return checkConfig(f.configFile)
		}
		if f.maxServerSeries < 1 {
			logger.Error("Invalid flag", "flag", "--server-metrics.max-series-per-target", "value", f.maxServerSeries, "err", "must be at least 1")
			return 2
		}
		if f.webLimits.maxConnections < 1 {
			logger.Error("Invalid flag", "flag", "--web.max-connections", "value", f.webLimits.maxConnections, "err", "must be at least 1")
			return 2
		}
		if f.dnsServer != "" {
			if _, _, err := net.SplitHostPort(f.dnsServer); err != nil {
				logger.Error("Invalid flag", "flag", "--discovery.dns-server", "value", f.dnsServer, "err", err)
				return 2
			}
		}
		if err := runDaemon(ctx, logger, f, daemonHooks{}); err != nil {
			logger.Error("Daemon failed", "err", err)
			return 1
		}
		return 0
	}
}

// addWebFlags adds the HTTP server flags shared by run and demo.
func addWebFlags(cmd *kingpin.CmdClause, f *daemonFlags, defaultAddress string) {
	cmd.Flag("web.telemetry-path", "Path under which to expose metrics.").Default("/metrics").StringVar(&f.telemetryPath)
	cmd.Flag("web.enable-lifecycle", "Enable reloading the configuration through HTTP POST /-/reload.").BoolVar(&f.enableLifecycle)
	f.web = kingpinflag.AddFlags(cmd, defaultAddress)
	f.webLimits = defaultWebLimits
	cmd.Flag("web.max-connections", "Most connections the web server holds open at once per listen address; more wait to be accepted.").
		Default(strconv.Itoa(defaultWebLimits.maxConnections)).IntVar(&f.webLimits.maxConnections)
}

// checkConfig implements --config.check: it prints the result and returns
// the exit code.
func checkConfig(path string) int {
	cfg, err := config.Load(path)
	if err == nil {
		err = checkWorkloads(cfg)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: FAILED\n%v\n", path, err)
		return 1
	}
	fmt.Printf("%s: SUCCESS: %d targets, %d probes, %d target/probe pairs\n", path, len(cfg.Targets), len(cfg.Probes), len(cfg.Pairs()))
	return 0
}

// checkWorkloads builds every (target, probe) pair's requester without
// sending anything, so a dataset file with a bad line fails the check the
// way it would fail that probe at startup.
func checkWorkloads(cfg *config.Config) error {
	var errs []error
	for _, p := range cfg.Pairs() {
		r, err := client.New(p.Target, p.Probe, client.Options{Logger: promslog.NewNopLogger()})
		if err != nil {
			errs = append(errs, fmt.Errorf("target %q, probe %q: %w", p.Key.Target, p.Key.Probe, err))
			continue
		}
		r.Close()
	}
	return errors.Join(errs...)
}
