// Package rulefile holds the types of a Prometheus rule file, which rules
// renders and rules/promtest tests, and keeps with a rendered file the
// plan it was rendered from, so rules/promtest reads that plan instead of
// building it again. Package rules re-exports the types; the plan stays
// inside the rules packages.
package rulefile

import (
	"iter"

	"github.com/vllm-prober/vllm-prober/rules/internal/plan"
)

// RuleFile is a Prometheus rule file.
type RuleFile struct {
	Groups []RuleGroup `yaml:"groups"`
	plan   *plan.Plan  // what rules rendered it from; nil for a file built otherwise
}

// Rules yields every rule of f, group by group, in file order.
func (f *RuleFile) Rules() iter.Seq[Rule] {
	return func(yield func(Rule) bool) {
		for _, g := range f.Groups {
			for _, r := range g.Rules {
				if !yield(r) {
					return
				}
			}
		}
	}
}

// RuleGroup is one group of rules evaluated together.
type RuleGroup struct {
	Name     string `yaml:"name"`
	Interval string `yaml:"interval,omitempty"`
	Rules    []Rule `yaml:"rules"`
}

// Rule is one recording (Record set) or alerting (Alert set) rule.
type Rule struct {
	Record      string            `yaml:"record,omitempty"`
	Alert       string            `yaml:"alert,omitempty"`
	Expr        string            `yaml:"expr"`
	For         string            `yaml:"for,omitempty"`
	Labels      map[string]string `yaml:"labels,omitempty"`
	Annotations map[string]string `yaml:"annotations,omitempty"`
}

// Rendered returns a rule file of groups rendered from p.
func Rendered(p *plan.Plan, groups ...RuleGroup) *RuleFile {
	return &RuleFile{Groups: groups, plan: p}
}

// Plan returns the plan rf was rendered from, or nil when rf was not
// rendered (Rendered) from one.
func Plan(rf *RuleFile) *plan.Plan { return rf.plan }
