package collector

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	versioncollector "github.com/prometheus/client_golang/prometheus/collectors/version"
)

// Self metric names and help texts. vllm_prober_build_info comes from
// client_golang's version collector with the program name "vllm_prober".
const (
	selfProgram = "vllm_prober"

	reloadSuccessName = "vllm_prober_config_last_reload_successful"
	reloadSuccessHelp = "Whether the last configuration reload attempt was successful (1) or not (0)."

	reloadTimeName = "vllm_prober_config_last_reload_success_timestamp_seconds"
	reloadTimeHelp = "Unix time of the last successful configuration load."

	ledgerErrorsName = "vllm_prober_ledger_write_errors_total"
	ledgerErrorsHelp = "Ledger records that could not be written."
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
		build:        versioncollector.NewCollector(selfProgram),
		ledgerErrors: ledgerWriteErrors,
		reloadOK:     prometheus.NewDesc(reloadSuccessName, reloadSuccessHelp, nil, nil),
		reloadTime:   prometheus.NewDesc(reloadTimeName, reloadTimeHelp, nil, nil),
		ledgerDesc:   prometheus.NewDesc(ledgerErrorsName, ledgerErrorsHelp, nil, nil),
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
