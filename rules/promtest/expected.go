package promtest

import (
	"fmt"
	"maps"
	"math"
	"regexp"
	"strings"
	"time"

	"github.com/vllm-prober/vllm-prober/rules"
)

// What a firing alert looks like to promtool: the generated rule's labels
// and its annotations expanded as Prometheus expands them.

// find returns the rule of an alert whose labels include want.
func (tb *testBuilder) find(alert string, want map[string]string) (rules.Rule, bool) {
	for r := range tb.rules.Rules() {
		if r.Alert != alert {
			continue
		}
		ok := true
		for k, v := range want {
			if lv, has := r.Labels[k]; has && lv != v {
				ok = false
			}
		}
		if ok {
			return r, true
		}
	}
	return rules.Rule{}, false
}

// expected expands a rule's annotations the way Prometheus would for the
// given labels and already formatted value.
func expected(r rules.Rule, labels map[string]string, value string) ExpAlert {
	ann := map[string]string{}
	for k, v := range r.Annotations {
		ann[k] = expandTemplate(v, labels, value)
	}
	lbl := maps.Clone(labels)
	maps.Copy(lbl, r.Labels)
	return ExpAlert{ExpLabels: lbl, ExpAnnotations: ann}
}

// valueAction is a template action that renders the alert's value
// ({{ $value | humanizeDuration }} and the like); the tests are given the
// value already formatted.
var valueAction = regexp.MustCompile(`\{\{ \$value\b[^}]*\}\}`)

// expandTemplate replaces the few template actions the generated
// annotations use: {{ $labels.x }} and the value's.
func expandTemplate(s string, labels map[string]string, value string) string {
	for k, v := range labels {
		s = strings.ReplaceAll(s, "{{ $labels."+k+" }}", v)
	}
	return valueAction.ReplaceAllLiteralString(s, value)
}

// humanizeDuration mirrors Prometheus' template function of that name.
func humanizeDuration(v float64) string {
	if v == 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return fmt.Sprintf("%.4gs", v)
	}
	if math.Abs(v) >= 1 {
		d := time.Duration(int64(v)) * time.Second
		if d >= time.Minute {
			s := int64(v)
			switch {
			case s >= 86400:
				return fmt.Sprintf("%dd %dh %dm %ds", s/86400, s/3600%24, s/60%60, s%60)
			case s >= 3600:
				return fmt.Sprintf("%dh %dm %ds", s/3600, s/60%60, s%60)
			default:
				return fmt.Sprintf("%dm %ds", s/60, s%60)
			}
		}
		return fmt.Sprintf("%.4gs", v)
	}
	prefix := ""
	for _, p := range []string{"m", "u", "n", "p", "f", "a", "z", "y"} {
		if math.Abs(v) >= 1 {
			break
		}
		prefix = p
		v *= 1000
	}
	return fmt.Sprintf("%.4g%ss", v, prefix)
}

// humanizePercentage mirrors Prometheus' template function of that name
// for ratios between 0.001 and 10.
func humanizePercentage(v float64) string { return fmt.Sprintf("%.4g%%", v*100) }
