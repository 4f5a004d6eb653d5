package collector

import (
	"github.com/vllm-prober/vllm-prober/collector/metricname"

	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/vllm-prober/vllm-prober/internal/promtext"
)

func TestSelfMetrics(t *testing.T) {
	header := lines(
		"# HELP vllm_prober_config_last_reload_successful "+metricname.ConfigLastReloadSuccessfulHelp,
		"# TYPE vllm_prober_config_last_reload_successful gauge")
	stamp := lines(
		"# HELP vllm_prober_config_last_reload_success_timestamp_seconds "+metricname.ConfigLastReloadSuccessTimestampHelp,
		"# TYPE vllm_prober_config_last_reload_success_timestamp_seconds gauge")
	ledger := lines(
		"# HELP vllm_prober_ledger_write_errors_total "+metricname.LedgerWriteErrorsHelp,
		"# TYPE vllm_prober_ledger_write_errors_total counter")
	tests := []struct {
		name    string
		reloads []bool // applied in order, one minute apart
		want    string
	}{
		{"before any load", nil, header + "vllm_prober_config_last_reload_successful 0\n" + stamp +
			"vllm_prober_config_last_reload_success_timestamp_seconds 0\n" + ledger + "vllm_prober_ledger_write_errors_total 3\n"},
		{"successful load", []bool{true}, header + "vllm_prober_config_last_reload_successful 1\n" + stamp +
			"vllm_prober_config_last_reload_success_timestamp_seconds 1.7964e+09\n" + ledger + "vllm_prober_ledger_write_errors_total 3\n"},
		{"failed reload keeps the last success time", []bool{true, false}, header + "vllm_prober_config_last_reload_successful 0\n" + stamp +
			"vllm_prober_config_last_reload_success_timestamp_seconds 1.7964e+09\n" + ledger + "vllm_prober_ledger_write_errors_total 3\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := NewSelfMetrics(func() float64 { return 3 })
			at := time.Unix(1796400000, 0)
			for _, ok := range tc.reloads {
				m.SetReload(ok, at)
				at = at.Add(time.Minute)
			}
			if err := testutil.CollectAndCompare(m, strings.NewReader(tc.want), metricname.ConfigLastReloadSuccessful, metricname.ConfigLastReloadSuccessTimestamp, metricname.LedgerWriteErrors); err != nil {
				t.Error(err)
			}
		})
	}
	t.Run("build info", func(t *testing.T) {
		mfs := promtext.Gather(t, NewSelfMetrics(nil))
		bi := mfs["vllm_prober_build_info"]
		if bi == nil || bi.GetMetric()[0].GetGauge().GetValue() != 1 {
			t.Fatalf("vllm_prober_build_info missing or not 1: %v", bi)
		}
		var names []string
		for _, lp := range bi.GetMetric()[0].GetLabel() {
			names = append(names, lp.GetName())
		}
		if got := strings.Join(names, ","); got != "branch,goarch,goos,goversion,revision,tags,version" {
			t.Errorf("labels %s", got)
		}
		if got := mfs[metricname.LedgerWriteErrors].GetMetric()[0].GetCounter().GetValue(); got != 0 {
			t.Errorf("nil ledger func: %v", got)
		}
	})
}
