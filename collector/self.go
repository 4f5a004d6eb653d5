package collector

import (
	"github.com/vllm-prober/vllm-prober/collector/metricname"

	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	versioncollector "github.com/prometheus/client_golang/prometheus/collectors/version"
)

// SelfMetrics describes the prober itself: build info, config reloads and
// ledger write errors. It implements prometheus.Collector.
type SelfMetrics struct {
	build        prometheus.Collector
	ledgerErrors func() float64

	reloadOK, reloadTime, ledgerDesc *prometheus.Desc

	mu     sync.Mutex
	ok     bool
	lastOK time.Time
}

var _ prometheus.Collector = (*SelfMetrics)(nil)

// NewSelfMetrics returns the self metrics. ledgerWriteErrors is read at
// every scrape (for example (*ledger.Ledger).WriteErrors); nil reports 0. The
// reload gauges start at 0 until SetReload is called.
func NewSelfMetrics(ledgerWriteErrors func() float64) *SelfMetrics {
	if ledgerWriteErrors == nil {
		ledgerWriteErrors = func() float64 { return 0 }
	}
	return &SelfMetrics{
		build:        versioncollector.NewCollector(metricname.Program),
		ledgerErrors: ledgerWriteErrors,
		reloadOK:     prometheus.NewDesc(metricname.ConfigLastReloadSuccessful, metricname.ConfigLastReloadSuccessfulHelp, nil, nil),
		reloadTime:   prometheus.NewDesc(metricname.ConfigLastReloadSuccessTimestamp, metricname.ConfigLastReloadSuccessTimestampHelp, nil, nil),
		ledgerDesc:   prometheus.NewDesc(metricname.LedgerWriteErrors, metricname.LedgerWriteErrorsHelp, nil, nil),
	}
}

// SetReload records the outcome of a configuration load at time at. A
// failed reload keeps the timestamp of the last successful one.
func (m *SelfMetrics) SetReload(ok bool, at time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.ok = ok
	if ok {
		m.lastOK = at
	}
}

// Describe implements prometheus.Collector.
func (m *SelfMetrics) Describe(ch chan<- *prometheus.Desc) {
	m.build.Describe(ch)
	ch <- m.reloadOK
	ch <- m.reloadTime
	ch <- m.ledgerDesc
}

// Collect implements prometheus.Collector.
func (m *SelfMetrics) Collect(ch chan<- prometheus.Metric) {
	m.build.Collect(ch)
	m.mu.Lock()
	ok, last := m.ok, m.lastOK
	m.mu.Unlock()
	okValue, lastValue := 0.0, 0.0
	if ok {
		okValue = 1
	}
	if !last.IsZero() {
		lastValue = float64(last.UnixNano()) / 1e9
	}
	ch <- prometheus.MustNewConstMetric(m.reloadOK, prometheus.GaugeValue, okValue)
	ch <- prometheus.MustNewConstMetric(m.reloadTime, prometheus.GaugeValue, lastValue)
	ch <- prometheus.MustNewConstMetric(m.ledgerDesc, prometheus.CounterValue, m.ledgerErrors())
}
