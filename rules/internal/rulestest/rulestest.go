// Package rulestest holds what the tests of rules and rules/promtest
// share: small configurations to generate from, the example config, and
// lookups in a generated rule file.
package rulestest

import (
	"path/filepath"
	"runtime"
	"time"

	"github.com/prometheus/common/model"

	"github.com/vllm-prober/vllm-prober/config"
	"github.com/vllm-prober/vllm-prober/discovery"
	"github.com/vllm-prober/vllm-prober/rules"
)

// RepoPath is rel, a path from the repository's root, as a path the
// tests of any package can open.
func RepoPath(rel string) string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..", rel)
}

// ExampleConfig is the example configuration the checked-in rules are
// generated from.
var ExampleConfig = RepoPath("deploy/examples/full.yml")

// Probe is a chat probe with the given rate, objective and SLOs.
func Probe(name string, rate, objective float64, slo config.SLO) config.Probe {
	return config.Probe{Name: name, API: config.APIChat, Rate: rate, Objective: objective, SLO: slo}
}

// OneProbe is a configuration of p against one target, llama.
func OneProbe(p config.Probe) *config.Config {
	return &config.Config{Targets: []config.Target{{Name: "llama"}}, Probes: []config.Probe{p}}
}

// Sec is d as a config duration.
func Sec(d time.Duration) model.Duration { return model.Duration(d) }

// Alerts returns the alerting rules named name, in file order.
func Alerts(rf *rules.RuleFile, name string) []rules.Rule {
	var out []rules.Rule
	for r := range rf.Rules() {
		if r.Alert == name {
			out = append(out, r)
		}
	}
	return out
}

// Records returns the recording rules by the name they record.
func Records(rf *rules.RuleFile) map[string]rules.Rule {
	out := map[string]rules.Rule{}
	for r := range rf.Rules() {
		if r.Record != "" {
			out[r.Record] = r
		}
	}
	return out
}

// FleetConfig has a target with a url and discovery (gateway and
// replicas), one with discovery only and a static one; probe chat
// watches its output fingerprint.
func FleetConfig() *config.Config {
	sd := &discovery.Config{FileSD: &discovery.FileSDConfig{Files: []string{"replicas.json"}}}
	chat := Probe("chat", 0.5, 0.99, config.SLO{TTFT: Sec(time.Second)})
	chat.Fingerprint = &config.Fingerprint{Tokens: 16, Confirm: 3}
	return &config.Config{
		Targets: []config.Target{
			{Name: "fleet", URL: "http://gateway:8000", Discovery: sd},
			{Name: "pool", Discovery: sd},
			{Name: "static", URL: "http://vllm:8000"},
		},
		Probes: []config.Probe{chat},
	}
}

// MixedFleetConfig is FleetConfig with a second probe, lean, exporting
// TTFT and schedule lag native-only, so the fleet's gateway reads both
// histogram forms.
func MixedFleetConfig() *config.Config {
	cfg := FleetConfig()
	off := false
	lean := Probe("lean", 0.5, 0.99, config.SLO{TTFT: Sec(time.Second)})
	lean.Histograms, lean.ClassicBuckets = []string{config.HistogramTTFT, config.HistogramScheduleLag}, &off
	cfg.Probes = append(cfg.Probes, lean)
	return cfg
}

// LeanConfig has a probe with every histogram (full), one with TTFT and
// E2EL native-only (lean) and one with E2EL only, classic (e2el-only);
// target b runs only e2el-only.
func LeanConfig() *config.Config {
	off := false
	slo := config.SLO{TTFT: Sec(time.Second), TPOT: Sec(100 * time.Millisecond)}
	lean := Probe("lean", 1, 0.99, slo)
	lean.Histograms, lean.ClassicBuckets = []string{config.HistogramTTFT, config.HistogramE2EL}, &off
	e2el := Probe("e2el-only", 1, 0.99, slo)
	e2el.Histograms = []string{config.HistogramE2EL}
	return &config.Config{
		Targets: []config.Target{{Name: "a"}, {Name: "b", Probes: []string{"e2el-only"}}},
		Probes:  []config.Probe{Probe("full", 1, 0.99, slo), lean, e2el},
	}
}

// ReasoningConfig has a reasoning probe with TTFT and TTFA SLOs whose
// histograms select both.
func ReasoningConfig() *config.Config {
	p := Probe("think", 1, 0.99, config.SLO{TTFT: Sec(time.Second), TTFA: Sec(8 * time.Second)})
	p.Histograms = []string{config.HistogramTTFT, config.HistogramTTFA, config.HistogramE2EL}
	return OneProbe(p)
}

// Replicas are replica addresses for the tests' fleets: four, so one
// failing is a minority and three passing a majority.
var Replicas = []string{"10.0.0.1:8000", "10.0.0.2:8000", "10.0.0.3:8000", "10.0.0.4:8000"}

// DiscoveryConfig is FleetConfig with each mechanism: fleet (gateway)
// by file_sd every 1m, pool by dns every 30s and slow, without a url, by
// http_sd every 10m.
func DiscoveryConfig() *config.Config {
	cfg := FleetConfig()
	cfg.Targets[1].Discovery = &discovery.Config{DNS: &discovery.DNSConfig{Names: []string{"pool.svc"}, Port: 8000}}
	cfg.Targets = append(cfg.Targets, config.Target{Name: "slow",
		Discovery: &discovery.Config{HTTPSD: &discovery.HTTPSDConfig{URL: "http://sd:8080/targets", Refresh: Sec(10 * time.Minute)}}})
	return cfg
}
