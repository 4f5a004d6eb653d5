package bench

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/vllm-prober/vllm-prober/config"
	"github.com/vllm-prober/vllm-prober/probe"
)

// capacityPrompts is how many distinct prompts a flag-mode search cycles.
const capacityPrompts = 1000

// capacitySender builds what sends a search's requests and checks the
// server answers; it also completes the pass rule from the contract.
func capacitySender(ctx context.Context, o *CapacityOptions, env Env) (target, probeName string, s Sender, burstiness float64, err error) {
	if o.Config == nil {
		return flagSender(ctx, o, env)
	}
	t, p, err := findPair(o.Config, o.TargetName, o.ProbeName)
	if err != nil {
		return "", "", nil, 0, err
	}
	if o.RuleFromProbe {
		o.Rule.fill(time.Duration(p.SLO.TTFT), time.Duration(p.SLO.TPOT), time.Duration(p.SLO.E2EL))
	}
	req, err := probe.NewRequester(t, p, probe.RequesterOptions{Logger: env.Logger})
	if err != nil {
		return "", "", nil, 0, fmt.Errorf("%w: %w", ErrUsage, err)
	}
	res := &probe.Result{Target: t.Name, Probe: p.Name, Scheduled: env.Now()}
	req.Do(ctx, res)
	if !completed(res) {
		req.Close()
		return "", "", nil, 0, fmt.Errorf("target %s (%s) not ready: the test request ended %s: %s", t.Name, t.URL, res.Disposition, res.Error)
	}
	return t.Name, p.Name, req, p.Burstiness, nil
}

// fill sets the objectives the rule does not name yet.
func (r *PassRule) fill(ttft, tpot, e2el time.Duration) {
	if r.TTFT == 0 && r.TPOT == 0 && r.E2EL == 0 {
		r.TTFT, r.TPOT, r.E2EL = ttft, tpot, e2el
	}
}

// flagSender prepares the bench client for a flag-mode search.
func flagSender(ctx context.Context, o *CapacityOptions, env Env) (string, string, Sender, float64, error) {
	w := o.Workload
	w.NumPrompts, w.RequestRate, w.Burstiness = capacityPrompts, o.Rates[0], o.Burstiness
	if err := w.Validate(); err != nil {
		return "", "", nil, 0, err
	}
	if o.RuleFromProbe {
		o.Rule.fill(w.Goodput.TTFT, w.Goodput.TPOT, w.Goodput.E2EL)
	}
	prompts, err := benchPrompts(&w)
	if err != nil {
		return "", "", nil, 0, err
	}
	client, err := prepare(ctx, &w, prompts, env)
	if err != nil {
		return "", "", nil, 0, err
	}
	o.Workload = w
	return hostOf(w.BaseURL), ProbeName, client, o.Burstiness, nil
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
