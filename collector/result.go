package collector

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vllm-prober/vllm-prober/collector/metricname"
	"github.com/vllm-prober/vllm-prober/config"
	"github.com/vllm-prober/vllm-prober/probe"
)

// ResultRegistry returns a fresh registry holding the metrics of one
// request, for /probe: every vllm_probe_* series of the pair (counters at 0
// or 1, histograms with one observation, buckets from p's SLOs) plus
// vllm_probe_success and vllm_probe_duration_seconds. The pair's labels are
// r.Target, r.Probe and r.Replica.
func ResultRegistry(r *probe.Result, p config.Probe) *prometheus.Registry {
	reg := prometheus.NewRegistry()
	if r == nil {
		return reg
	}
	p.Name = r.Probe
	c := New(Options{})
	c.PairStarted(config.Pair{Key: r.Key(), Probe: p})
	// The result was scheduled before this throwaway collector existed;
	// clear Scheduled so the stale-result guard of Finished keeps it.
	rc := *r
	rc.Scheduled = time.Time{}
	c.Offered(rc.Key())
	c.Finished(&rc)
	reg.MustRegister(c)

	labels := prometheus.Labels{labelTarget: r.Target, labelProbe: r.Probe}
	if r.Replica != "" {
		labels[labelReplica] = r.Replica
	}
	success := prometheus.NewGauge(prometheus.GaugeOpts{Name: metricname.Success, Help: metricname.SuccessHelp, ConstLabels: labels})
	if r.Disposition == probe.Accepted {
		success.Set(1)
	}
	duration := prometheus.NewGauge(prometheus.GaugeOpts{Name: metricname.Duration, Help: metricname.DurationHelp, ConstLabels: labels})
	duration.Set(resultDuration(r).Seconds())
	// Registration of these fixed descriptors in a fresh registry can only
	// fail on invalid label values, which PairStarted already refused; then the
	// registry simply lacks them.
	_ = reg.Register(success)
	_ = reg.Register(duration)
	return reg
}

// resultDuration is E2EL when measured, otherwise the time from send to
// the end of the request (a timeout, a failure), otherwise the time the
// HTTP phases took.
func resultDuration(r *probe.Result) time.Duration {
	if r.E2EL > 0 {
		return r.E2EL
	}
	if r.Elapsed > 0 {
		return r.Elapsed
	}
	var sum time.Duration
	for _, d := range r.Phases {
		sum += max(d, 0)
	}
	return sum
}
