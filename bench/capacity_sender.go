package bench

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/vllm-prober/vllm-prober/bench/capacity"
	"github.com/vllm-prober/vllm-prober/bench/stats"
	"github.com/vllm-prober/vllm-prober/config"
	"github.com/vllm-prober/vllm-prober/probe"
	"github.com/vllm-prober/vllm-prober/probe/client"
	"github.com/vllm-prober/vllm-prober/probe/schedule"
)

// capacityPrompts is how many dataset prompts a flag-mode search cycles.
const capacityPrompts = 1000

// sendSetup is what sends a search's requests and how.
type sendSetup struct {
	target, probe string
	sender        schedule.Sender
	burstiness    float64
	// maxInFlight is the probe's max_in_flight (0 in flag mode): a request
	// whose time comes with that many outstanding is not sent and ends
	// cancelled/in_flight_cap, as in the daemon.
	maxInFlight int
	timeout     time.Duration // the bound on one request
	server      capacity.ServerInfo
}

// capacitySender builds what sends a search's requests and checks the
// server answers; it also completes the pass rule from the contract.
func capacitySender(ctx context.Context, o *CapacityOptions, env Env) (sendSetup, error) {
	if o.Config == nil {
		return flagSender(ctx, o, env)
	}
	t, p, err := findPair(o.Config, o.TargetName, o.ProbeName)
	if err != nil {
		return sendSetup{}, err
	}
	if o.RuleFromProbe {
		fillRule(&o.Rule, time.Duration(p.SLO.TTFT), time.Duration(p.SLO.TPOT), time.Duration(p.SLO.E2EL))
	}
	if p.API == config.APIEmbeddings {
		o.Rule.SteadyMetric = stats.MetricE2EL // no TTFT: its answer is its only output
	}
	// The ready check and the model are asked through a Requester that
	// logs nothing: its failures are returned as the one error, as bench's
	// prepare does, where its own warning would say them twice.
	ready, err := client.New(t, p, client.Options{Logger: slog.New(slog.DiscardHandler), ByIndex: true})
	if err != nil {
		return sendSetup{}, fmt.Errorf("%w: %w", ErrUsage, err)
	}
	err = readyCheck(ctx, env, t.URL, o.Workload.ReadyCheckTimeout, func(ctx context.Context) (*probe.Result, error) {
		res := &probe.Result{Target: t.Name, Probe: p.Name, Scheduled: env.Now()}
		ready.Do(ctx, res)
		return res, nil
	})
	if err != nil {
		ready.Close()
		return sendSetup{}, fmt.Errorf("target %s: %w", t.Name, err)
	}
	model, err := ready.Model(ctx)
	ready.Close()
	if err != nil {
		return sendSetup{}, fmt.Errorf("target %s: server %s not ready: %w", t.Name, t.URL, err)
	}
	// The run's Requester names the model the server gave, as bench's
	// does: no measured request waits for /v1/models, and the server is
	// asked once. By index: request n sends the workload's item n, so the
	// shards of a sharded search send what one process would.
	t.Model = model
	req, err := client.New(t, p, client.Options{Logger: env.Logger, ByIndex: true})
	if err != nil {
		return sendSetup{}, fmt.Errorf("%w: %w", ErrUsage, err)
	}
	return sendSetup{target: t.Name, probe: p.Name, sender: req, burstiness: p.Burstiness, maxInFlight: p.MaxInFlight,
		timeout: time.Duration(p.Timeout), server: capacity.ServerInfo{Model: model, Version: serverVersion(ctx, t)}}, nil
}

// fillRule sets the objectives the rule does not name yet.
func fillRule(r *capacity.PassRule, ttft, tpot, e2el time.Duration) {
	if r.TTFT == 0 && r.TPOT == 0 && r.E2EL == 0 {
		r.TTFT, r.TPOT, r.E2EL = ttft, tpot, e2el
	}
}

// flagSender prepares the bench Requester for a flag-mode search.
func flagSender(ctx context.Context, o *CapacityOptions, env Env) (sendSetup, error) {
	w := o.Workload
	w.NumPrompts, w.RequestRate, w.Burstiness = capacityPrompts, o.Rates[0], o.Burstiness
	if err := w.validate(); err != nil {
		return sendSetup{}, err
	}
	if o.RuleFromProbe {
		fillRule(&o.Rule, w.Goodput.TTFT, w.Goodput.TPOT, w.Goodput.E2EL)
	}
	prompts, err := benchPrompts(&w)
	if err != nil {
		return sendSetup{}, err
	}
	req, err := prepare(ctx, &w, prompts, env)
	if err != nil {
		return sendSetup{}, err
	}
	o.Workload = w
	return sendSetup{target: hostOf(w.BaseURL), probe: benchProbeName, sender: req, burstiness: o.Burstiness, timeout: w.Timeout,
		server: capacity.ServerInfo{Model: w.Model, Version: serverVersion(ctx, benchTarget(&w))}}, nil
}

// findPair returns the named probe and the target it runs against.
func findPair(cfg *config.Config, targetName, probeName string) (config.Target, config.Probe, error) {
	i := slices.IndexFunc(cfg.Probes, func(p config.Probe) bool { return p.Name == probeName })
	if i < 0 {
		return config.Target{}, config.Probe{}, usageErr("--probe %q: no such probe in the config", probeName)
	}
	p := cfg.Probes[i]
	for _, t := range cfg.Targets {
		runs := len(t.Probes) == 0 || slices.Contains(t.Probes, probeName)
		if (targetName == "" && runs) || t.Name == targetName {
			return t, p, nil
		}
	}
	if targetName != "" {
		return config.Target{}, config.Probe{}, usageErr("--target %q: no such target in the config", targetName)
	}
	return config.Target{}, config.Probe{}, usageErr("--probe %q: no target runs it; name one with --target", probeName)
}
