package schedule_test

import (
	"math"
	"net/http"
	"net/http/httptest"
	"regexp"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/model"

	"github.com/vllm-prober/vllm-prober/collector"
	"github.com/vllm-prober/vllm-prober/config"
	"github.com/vllm-prober/vllm-prober/internal/daemontest"
	"github.com/vllm-prober/vllm-prober/probe"
	"github.com/vllm-prober/vllm-prober/probe/ledger"
	"github.com/vllm-prober/vllm-prober/simulator"
	"github.com/vllm-prober/vllm-prober/simulator/simtest"
)

// relChatProbe is a quality-checked chat probe at a constant rate.
func relChatProbe(name string, rate float64, timeout time.Duration) config.Probe {
	return config.Probe{
		Name: name, API: config.APIChat, Rate: rate, Burstiness: math.Inf(1), MaxInFlight: 16,
		Timeout: model.Duration(timeout),
		Request: config.Request{MaxTokens: 16},
		Workload: config.Workload{Prompts: []config.Prompt{{
			Messages: []config.Message{{Role: "user", Content: "What is 12*12? Digits only."}},
			Expect:   config.Expect{Regex: config.Regexp{Regexp: regexp.MustCompile(`\b144\b`), Source: `\b144\b`}},
		}}},
		Quality:   config.Quality{FinishReasons: []string{"stop", "length"}, MinOutputTokens: 1},
		Objective: 0.99,
	}
}

// relSim serves a simulator with faults on a loopback port.
func relSim(t *testing.T, seed int64, f simulator.Faults) string {
	t.Helper()
	o := simulator.DefaultOptions()
	o.Seed, o.Jitter, o.Faults = seed, 0, f
	_, url := simtest.Start(t, o)
	return url
}

// relServer serves h on a loopback port.
func relServer(t *testing.T, h http.HandlerFunc) string {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(func() { srv.CloseClientConnections(); srv.Close() })
	return srv.URL
}

// refusedURL returns a loopback URL nothing listens on.
func refusedURL(t *testing.T) string {
	t.Helper()
	return "http://" + daemontest.FreeAddr(t)
}

// pairCounts are one pair's counters read from the collector.
type pairCounts struct {
	offered, inFlight float64
	dispositions      map[string]float64
	reasons           map[string]float64
	checks, slos      map[string]float64
	ttftCount         uint64
}

// gatherCounts reads every pair's counters from reg.
func gatherCounts(t *testing.T, reg *prometheus.Registry) map[string]*pairCounts {
	t.Helper()
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*pairCounts{}
	for _, f := range fams {
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			key := config.PairKey{Target: labels["target"], Probe: labels["probe"], Replica: labels["replica"]}.String()
			pc := out[key]
			if pc == nil {
				pc = &pairCounts{dispositions: map[string]float64{}, reasons: map[string]float64{}, checks: map[string]float64{}, slos: map[string]float64{}}
				out[key] = pc
			}
			addCount(pc, f, m, labels)
		}
	}
	return out
}

func addCount(pc *pairCounts, f *dto.MetricFamily, m *dto.Metric, labels map[string]string) {
	switch f.GetName() {
	case "vllm_probe_requests_offered_total":
		pc.offered = m.GetCounter().GetValue()
	case "vllm_probe_requests_in_flight":
		pc.inFlight = m.GetGauge().GetValue()
	case "vllm_probe_requests_total":
		pc.dispositions[labels["disposition"]] = m.GetCounter().GetValue()
	case "vllm_probe_failures_total":
		pc.reasons[labels["reason"]] = m.GetCounter().GetValue()
	case "vllm_probe_quality_failures_total":
		pc.checks[labels["check"]] = m.GetCounter().GetValue()
	case "vllm_probe_slo_violations_total":
		pc.slos[labels["slo"]] = m.GetCounter().GetValue()
	case "vllm_probe_time_to_first_token_seconds":
		pc.ttftCount = m.GetHistogram().GetSampleCount()
	}
}

// sum adds up a map's values.
func sum(m map[string]float64) float64 {
	s := 0.0
	for _, v := range m {
		s += v
	}
	return s
}

// checkLedgerMatches checks, per pair, that the ledger records equal the
// counters per disposition and per reason, and that offered = sum of
// dispositions + in flight.
func checkLedgerMatches(t *testing.T, recs []ledger.Record, counts map[string]*pairCounts) {
	t.Helper()
	byDisp, byReason := map[string]map[string]float64{}, map[string]map[string]float64{}
	for _, r := range recs {
		key := recordKey(r)
		if byDisp[key] == nil {
			byDisp[key], byReason[key] = map[string]float64{}, map[string]float64{}
		}
		byDisp[key][string(r.Disposition)]++
		if r.Disposition != probe.Accepted && r.Reason != "" {
			byReason[key][r.Reason]++
		}
	}
	for key, pc := range counts {
		if key == "/" {
			continue
		}
		if got := sum(pc.dispositions) + pc.inFlight; got != pc.offered {
			t.Errorf("%s: offered %g != sum of dispositions + in flight %g", key, pc.offered, got)
		}
		for _, d := range probe.Dispositions {
			if c, l := pc.dispositions[string(d)], byDisp[key][string(d)]; c != l {
				t.Errorf("%s: requests_total{disposition=%q} = %g, ledger has %g", key, d, c, l)
			}
		}
		for _, r := range probe.Reasons {
			if c, l := pc.reasons[r], byReason[key][r]; c != l {
				t.Errorf("%s: failures_total{reason=%q} = %g, ledger has %g", key, r, c, l)
			}
		}
	}
}

// newCollectorRegistry registers a fresh Collector.
func newCollectorRegistry() (*collector.Collector, *prometheus.Registry) {
	c := collector.New(collector.Options{})
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	return c, reg
}

// recordKey names a ledger record's pair as config.PairKey.String does.
func recordKey(r ledger.Record) string {
	return config.PairKey{Target: r.Target, Probe: r.Probe, Replica: r.Replica}.String()
}
