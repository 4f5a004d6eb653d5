package plan

import (
	"fmt"

	"github.com/vllm-prober/vllm-prober/collector/metricname"
)

// A probe's `histograms:` and `classic_buckets:` (docs/design.md, Series
// budget) decide what the rules may read: the plan warns about every
// pair or target an alert cannot judge for want of a histogram.

// warnUncovered warns, for each pair that left out metric's histogram,
// that alert does not judge it.
func (p *Plan) warnUncovered(metric, alert string) {
	name := metricname.SelectedBy[metric]
	for i := range p.Pairs {
		pp := &p.Pairs[i]
		if !pp.Hist.Has(name) {
			if pp.LeanReplicas {
				p.warn(pp, alert, "not judged for this probe: %s", leanReplicasLeaveOut(name, metric))
				continue
			}
			p.warn(pp, alert, "not judged for this probe: its histograms leave out %s (%s); add %s to them to get the alert", name, metric, name)
		}
	}
}

// warnTargetsWithout warns, for each target none of whose probes exports
// metric, that alert cannot fire for it.
func (p *Plan) warnTargetsWithout(metric, alert string) {
	name := metricname.SelectedBy[metric]
	for _, t := range p.Targets {
		has := false
		for _, pp := range p.Pairs {
			has = has || (pp.Target == t.Name && pp.Hist.Has(name))
		}
		if !has {
			p.Warnings = append(p.Warnings, Warning{Target: t.Name, Alert: alert,
				Message: fmt.Sprintf("not judged for this target: none of its probes' histograms includes %s (%s)", name, metric)})
		}
	}
}
