package collector

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vllm-prober/vllm-prober/collector/metricname"
)

// DiscoveryMetrics describes the replica discovery of every target with
// `discovery:` (docs/design.md, Fleets): the replicas probed, those left
// out by max_replicas and the refreshes that failed. It implements
// prometheus.Collector; a target's series go with Forget.
type DiscoveryMetrics struct {
	replicas, dropped, failures *prometheus.Desc

	mu      sync.Mutex
	targets map[string]*discoveryCounts
}

type discoveryCounts struct {
	mechanism string
	replicas  int
	dropped   uint64
	failures  uint64
}

var _ prometheus.Collector = (*DiscoveryMetrics)(nil)

// NewDiscoveryMetrics returns DiscoveryMetrics with no target.
func NewDiscoveryMetrics() *DiscoveryMetrics {
	return &DiscoveryMetrics{
		replicas: prometheus.NewDesc(metricname.DiscoveryReplicas, metricname.DiscoveryReplicasHelp, []string{labelTarget}, nil),
		dropped:  prometheus.NewDesc(metricname.DiscoveryReplicasDropped, metricname.DiscoveryReplicasDroppedHelp, []string{labelTarget}, nil),
		failures: prometheus.NewDesc(metricname.DiscoveryFailures, metricname.DiscoveryFailuresHelp, []string{labelTarget, "mechanism"}, nil),
		targets:  map[string]*discoveryCounts{},
	}
}

// Start exports target's series, at zero, for its discovery mechanism; a
// target already known keeps its counts unless its mechanism changed.
func (m *DiscoveryMetrics) Start(target, mechanism string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if c := m.targets[target]; c != nil && c.mechanism == mechanism {
		return
	}
	m.targets[target] = &discoveryCounts{mechanism: mechanism}
}

// Forget removes target's series: it no longer has discovery.
func (m *DiscoveryMetrics) Forget(target string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.targets, target)
}

// Updated records a refresh of target that probes replicas and leaves
// dropped replicas out (max_replicas).
func (m *DiscoveryMetrics) Updated(target string, replicas, dropped int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if c := m.targets[target]; c != nil {
		c.replicas = replicas
		c.dropped += uint64(dropped)
	}
}

// Failed counts a failed refresh of target.
func (m *DiscoveryMetrics) Failed(target string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if c := m.targets[target]; c != nil {
		c.failures++
	}
}

// Describe implements prometheus.Collector.
func (m *DiscoveryMetrics) Describe(ch chan<- *prometheus.Desc) {
	ch <- m.replicas
	ch <- m.dropped
	ch <- m.failures
}

// Collect implements prometheus.Collector.
func (m *DiscoveryMetrics) Collect(ch chan<- prometheus.Metric) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for target, c := range m.targets {
		ch <- prometheus.MustNewConstMetric(m.replicas, prometheus.GaugeValue, float64(c.replicas), target)
		ch <- prometheus.MustNewConstMetric(m.dropped, prometheus.CounterValue, float64(c.dropped), target)
		ch <- prometheus.MustNewConstMetric(m.failures, prometheus.CounterValue, float64(c.failures), target, c.mechanism)
	}
}
