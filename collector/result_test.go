package collector

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/vllm-prober/vllm-prober/collector/metricname"
	"github.com/vllm-prober/vllm-prober/config"
	"github.com/vllm-prober/vllm-prober/internal/promtext"
	"github.com/vllm-prober/vllm-prober/probe"
)

func TestResultRegistry(t *testing.T) {
	tests := []struct {
		name     string
		result   probe.Result
		success  string
		duration string
	}{
		{"accepted uses E2EL", probe.Result{Disposition: probe.Accepted, TTFT: 200 * time.Millisecond, E2EL: 1500 * time.Millisecond}, "1", "1.5"},
		{"server failure sums the phases", probe.Result{Disposition: probe.ServerFailure, Reason: probe.ReasonHTTP5xx,
			Phases: probe.PhaseTimes{probe.PhaseConnect: 10 * time.Millisecond, probe.PhaseHeaders: 40 * time.Millisecond}}, "0", "0.05"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := tc.result
			r.Target, r.Probe, r.RequestID = "t", "p", "id-1"
			// /probe results were scheduled before the registry existed.
			r.Scheduled = time.Now().Add(-time.Second)
			reg := ResultRegistry(&r, config.Probe{Name: "ignored", SLO: config.SLO{TTFT: dur("150ms")}})
			want := lines(
				"# HELP vllm_probe_success "+metricname.SuccessHelp, "# TYPE vllm_probe_success gauge",
				`vllm_probe_success{probe="p",target="t"} `+tc.success,
				"# HELP vllm_probe_duration_seconds "+metricname.DurationHelp, "# TYPE vllm_probe_duration_seconds gauge",
				`vllm_probe_duration_seconds{probe="p",target="t"} `+tc.duration,
				"# HELP vllm_probe_requests_offered_total "+metricname.RequestsOfferedHelp, "# TYPE vllm_probe_requests_offered_total counter",
				`vllm_probe_requests_offered_total{probe="p",replica="",target="t"} 1`,
				"# HELP vllm_probe_requests_in_flight "+metricname.RequestsInFlightHelp, "# TYPE vllm_probe_requests_in_flight gauge",
				`vllm_probe_requests_in_flight{probe="p",replica="",target="t"} 0`,
			)
			if got := requestsValue(t, reg, string(r.Disposition)); got != 1 {
				t.Errorf("vllm_probe_requests_total{disposition=%q} = %v, want 1", r.Disposition, got)
			}
			if err := testutil.GatherAndCompare(reg, strings.NewReader(want), metricname.Success, metricname.Duration, metricname.RequestsOffered, metricname.RequestsInFlight); err != nil {
				t.Error(err)
			}
			if got := upperBounds(promtext.Series(t, promtext.Families(t, reg), metricname.TTFT).GetHistogram()); !slices.Contains(got, 0.15) {
				t.Errorf("ttft buckets %v lack the probe's SLO", got)
			}
		})
	}
	if n := testutil.CollectAndCount(New(Options{})); n != 0 {
		t.Errorf("a fresh collector exports %d series", n)
	}
	if reg := ResultRegistry(nil, config.Probe{}); reg == nil {
		t.Error("nil result must still give a registry")
	}
}

// requestsValue returns the value of requests_total{disposition=d} in reg.
func requestsValue(t *testing.T, reg *prometheus.Registry, d string) float64 {
	t.Helper()
	return promtext.Series(t, promtext.Families(t, reg), metricname.Requests, "disposition", d).GetCounter().GetValue()
}
