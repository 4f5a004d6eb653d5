package rules_test

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/vllm-prober/vllm-prober/rules"
)

// alertmanagerConfig is the example Alertmanager configuration.
const alertmanagerConfig = "../deploy/alertmanager/alertmanager.yml"

// inhibitRule is an inhibit_rules entry of deploy/alertmanager/alertmanager.yml.
type inhibitRule struct {
	Source []string `yaml:"source_matchers"`
	Target []string `yaml:"target_matchers"`
	Equal  []string `yaml:"equal"`
}

// matcherRe parses the matchers the example config writes:
// name="value", name!="value", name=~"re", name!~"re".
var matcherRe = regexp.MustCompile(`^(\w+)(=~|!~|!=|=)"(.*)"$`)

// matches says whether labels satisfy every matcher of ms, as Alertmanager
// does (regexps anchored).
func matches(t *testing.T, ms []string, labels map[string]string) bool {
	t.Helper()
	for _, m := range ms {
		g := matcherRe.FindStringSubmatch(strings.TrimSpace(m))
		if g == nil {
			t.Fatalf("matcher %q: not of the form name op \"value\"", m)
		}
		v := labels[g[1]]
		var ok bool
		switch g[2] {
		case "=":
			ok = v == g[3]
		case "!=":
			ok = v != g[3]
		default:
			ok = regexp.MustCompile("^(?:"+g[3]+")$").MatchString(v) == (g[2] == "=~")
		}
		if !ok {
			return false
		}
	}
	return true
}

// TestAlertmanagerInhibitions: the example Alertmanager config silences
// an alert only with one that already says the same thing. A target that
// is down silences its latency alerts; a target whose own /metrics cannot
// be read silences only the client/server TTFT comparison, which needs
// them: its client-side latency alerts read the prober's histograms and
// must still fire when users wait.
func TestAlertmanagerInhibitions(t *testing.T) {
	b, err := os.ReadFile(alertmanagerConfig)
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		Inhibit []inhibitRule `yaml:"inhibit_rules"`
	}
	if err := yaml.Unmarshal(b, &cfg); err != nil {
		t.Fatal(err)
	}
	alert := func(name string) map[string]string {
		return map[string]string{"alertname": name, "target": "llama-8b", "probe": "chat-short"}
	}
	cases := []struct {
		source, target string
		want           bool
	}{
		{rules.AlertTargetDown, rules.AlertLatencyHigh, true},
		{rules.AlertTargetDown, rules.AlertClientTTFTAboveServer, true},
		{rules.AlertScrapeFailing, rules.AlertClientTTFTAboveServer, true},
		{rules.AlertScrapeFailing, rules.AlertLatencyHigh, false},
		{rules.AlertScrapeFailing, rules.AlertFastBurn, false},
		{rules.AlertFastBurn, rules.AlertSlowBurn, true},
		{rules.AlertTargetDown, rules.AlertFastBurn, false},
		{rules.AlertInFlightCap, rules.AlertFastBurn, false},
		// With no replica probed nothing is down: the page that says so
		// must reach someone whatever else fires for the target.
		{rules.AlertTargetDown, rules.AlertNoReplicas, false},
		{rules.AlertScrapeFailing, rules.AlertNoReplicas, false},
		{rules.AlertFastBurn, rules.AlertNoReplicas, false},
		{rules.AlertNoReplicas, rules.AlertDiscoveryFailing, false},
		{rules.AlertTargetDown, rules.AlertDiscoveryFailing, false},
	}
	for _, c := range cases {
		src, tgt := alert(c.source), alert(c.target)
		got := false
		for _, r := range cfg.Inhibit {
			equal := true
			for _, l := range r.Equal {
				equal = equal && src[l] == tgt[l]
			}
			got = got || (equal && matches(t, r.Source, src) && matches(t, r.Target, tgt))
		}
		if got != c.want {
			t.Errorf("%s inhibits %s: %v, want %v", c.source, c.target, got, c.want)
		}
	}
}
