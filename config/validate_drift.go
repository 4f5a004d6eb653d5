package config

import (
	"fmt"

	"github.com/vllm-prober/vllm-prober/config/strictyaml"
)

// fingerprint checks a probe's fingerprint block and its prompts' seeds
// (docs/design.md, "Output fingerprint"): only the fixed prompts of a
// chat or completions probe repeat, and only at temperature 0 is their
// answer meant to stay the same.
func (v *validator) fingerprint(p *Probe, path string) {
	if _, ok := p.Request.Extra["seed"]; ok {
		for i, pr := range p.Workload.Prompts {
			if pr.Seed != nil {
				v.p.Fail(fmt.Sprintf("%s.workload.prompts[%d].seed", path, i),
					"conflicts with request.extra.seed: set the seed in one place, got %d", *pr.Seed)
			}
		}
	}
	f := p.Fingerprint
	if f == nil {
		return
	}
	fp := path + ".fingerprint"
	if kind := workloadKind(p.Workload); kind != "prompts" {
		v.p.Fail(fp, "needs a prompts workload, whose prompts repeat, got a %s workload", kind)
	}
	if p.API != APIChat && p.API != APICompletions {
		v.p.Fail(fp, "needs api chat or completions, whose answers stream text, got %s", strictyaml.Quote(p.API))
	}
	v.atLeast(fp+".tokens", f.Tokens, 1)
	v.atLeast(fp+".confirm", f.Confirm, 1)
	if p.Request.Temperature != 0 {
		v.p.Fail(path+".request.temperature", "must be 0 with fingerprint, whose answers must be deterministic, got %s", fmtFloat(p.Request.Temperature))
	}
}

// workloadKind names the kind of workload w sets, for messages; the
// workload check reports a workload with none or several.
func workloadKind(w Workload) string {
	switch {
	case w.Random != nil:
		return "random"
	case w.File != "":
		return "file"
	case len(w.Prompts) > 0:
		return "prompts"
	}
	return "missing"
}
