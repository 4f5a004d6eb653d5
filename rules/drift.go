package rules

import (
	"fmt"
	"time"

	"github.com/vllm-prober/vllm-prober/collector/metricname"
	"github.com/vllm-prober/vllm-prober/rules/internal/plan"
)

// AlertOutputChanged is the ticket raised when a probe's deterministic
// output fingerprint changed (docs/design.md, Output fingerprint).
const AlertOutputChanged = "VLLMProbeOutputChanged"

// outputChangedWindow is how long (before scaling) a confirmed change
// keeps VLLMProbeOutputChanged firing. The prober counts a change once,
// after `confirm` differing answers, so the alert needs no for: of its
// own, and the window only has to outlast an evaluation and the
// notification's group_wait.
const outputChangedWindow = time.Hour

// outputChangedAlerts are, per pair of a probe with `fingerprint:`, a
// ticket when its output fingerprint changed; one alert per replica when
// the target discovers them.
func (p builder) outputChangedAlerts() []Rule {
	var rs []Rule
	w := plan.FmtDur(p.Scale(outputChangedWindow))
	for _, pp := range p.Pairs {
		if !pp.Fingerprint {
			continue
		}
		ps := fmt.Sprintf("target=%q,probe=%q", pp.Target, pp.Probe)
		r := p.healthRule(AlertOutputChanged, SeverityTicket,
			fmt.Sprintf("sum by (target, probe, replica) (increase(%s%s[%s])) > 0", metricname.OutputFingerprintChanges, p.sel(ps), w), 0,
			fmt.Sprintf("The output of %s/%s changed in the last %s", pp.Target, pp.Probe, w),
			fmt.Sprintf("Probe %s against target %s sends fixed prompts at temperature 0 and hashes the first output tokens; the hash changed and stayed changed over the confirming answers. "+
				"The same request now gets a different answer: the model, its chat template, its quantisation or the engine's version was swapped. "+
				"The fingerprint field of the probe's ledger records shows when the hash changed.", pp.Probe, pp.Target))
		r.Labels["target"], r.Labels["probe"] = pp.Target, pp.Probe
		rs = append(rs, r)
	}
	return rs
}
