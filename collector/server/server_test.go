package server

import (
	"log/slog"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/common/model"

	"github.com/vllm-prober/vllm-prober/collector/metricname"
	"github.com/vllm-prober/vllm-prober/config"
	"github.com/vllm-prober/vllm-prober/internal/promtext"
)

const (
	successHelpLines  = "# HELP vllm_probe_server_scrape_success " + metricname.ServerScrapeSuccessHelp + "\n# TYPE vllm_probe_server_scrape_success gauge\n"
	infoHelpLines     = "# HELP vllm_probe_target_info " + metricname.TargetInfoHelp + "\n# TYPE vllm_probe_target_info gauge\n"
	runningHelpLines  = "# HELP vllm:num_requests_running Number of requests in model execution batches.\n# TYPE vllm:num_requests_running gauge\n"
	successTotalLines = "# HELP vllm:request_success_total Count of successfully processed requests.\n# TYPE vllm:request_success_total counter\n"
)

func TestServerScraperReexports(t *testing.T) {
	srv := newFakeServer(t, sample(t))
	h := newHarness(t, ScraperOptions{})
	h.Apply(&config.Config{Targets: []config.Target{serverTarget("llama", srv)}})
	h.wait(t, "llama")

	tests := []struct {
		name    string
		metrics []string
		want    string
	}{
		{"gauge keeps its vllm name and gains target", []string{"vllm:num_requests_running"}, runningHelpLines +
			`vllm:num_requests_running{model_name="meta-llama/Llama-3.1-8B-Instruct",target="llama"} 8` + "\n"},
		{"counter", []string{"vllm:request_success_total"}, successTotalLines + lines(
			`vllm:request_success_total{finished_reason="abort",model_name="meta-llama/Llama-3.1-8B-Instruct",target="llama"} 0`,
			`vllm:request_success_total{finished_reason="length",model_name="meta-llama/Llama-3.1-8B-Instruct",target="llama"} 131`,
			`vllm:request_success_total{finished_reason="stop",model_name="meta-llama/Llama-3.1-8B-Instruct",target="llama"} 1`)},
		{"histogram", []string{"vllm:time_to_first_token_seconds"}, lines(
			"# HELP vllm:time_to_first_token_seconds Histogram of time to first token in seconds.",
			"# TYPE vllm:time_to_first_token_seconds histogram",
			`vllm:time_to_first_token_seconds_bucket{model_name="meta-llama/Llama-3.1-8B-Instruct",target="llama",le="0.001"} 0`,
			`vllm:time_to_first_token_seconds_bucket{model_name="meta-llama/Llama-3.1-8B-Instruct",target="llama",le="0.005"} 0`,
			`vllm:time_to_first_token_seconds_bucket{model_name="meta-llama/Llama-3.1-8B-Instruct",target="llama",le="0.01"} 0`,
			`vllm:time_to_first_token_seconds_bucket{model_name="meta-llama/Llama-3.1-8B-Instruct",target="llama",le="0.02"} 13`,
			`vllm:time_to_first_token_seconds_bucket{model_name="meta-llama/Llama-3.1-8B-Instruct",target="llama",le="0.04"} 97`,
			`vllm:time_to_first_token_seconds_bucket{model_name="meta-llama/Llama-3.1-8B-Instruct",target="llama",le="0.06"} 123`,
			`vllm:time_to_first_token_seconds_bucket{model_name="meta-llama/Llama-3.1-8B-Instruct",target="llama",le="0.08"} 138`,
			`vllm:time_to_first_token_seconds_bucket{model_name="meta-llama/Llama-3.1-8B-Instruct",target="llama",le="0.1"} 140`,
			`vllm:time_to_first_token_seconds_bucket{model_name="meta-llama/Llama-3.1-8B-Instruct",target="llama",le="+Inf"} 140`,
			`vllm:time_to_first_token_seconds_sum{model_name="meta-llama/Llama-3.1-8B-Instruct",target="llama"} 0`,
			`vllm:time_to_first_token_seconds_count{model_name="meta-llama/Llama-3.1-8B-Instruct",target="llama"} 140`)},
		{"families outside allow are not exported", []string{"http_requests_total", "vllm:iteration_tokens_total", "vllm:request_queue_time_seconds_bucket"}, ""},
		{"scrape success", []string{metricname.ServerScrapeSuccess}, successHelpLines + `vllm_probe_server_scrape_success{target="llama"} 1` + "\n"},
		{"target info from /v1/models and /version", []string{metricname.TargetInfo}, infoHelpLines +
			`vllm_probe_target_info{model="meta-llama/Llama-3.1-8B-Instruct",server_version="0.26.0",target="llama"} 1` + "\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := testutil.CollectAndCompare(h, strings.NewReader(tc.want), tc.metrics...); err != nil {
				t.Error(err)
			}
		})
	}
	st := h.State("llama", "")
	if !st.Success || st.Err != "" || st.Model != "meta-llama/Llama-3.1-8B-Instruct" || st.ServerVersion != "0.26.0" || st.Series != 6 || !st.Last.Equal(fixedNow) {
		t.Errorf("state %+v", st)
	}
	if !strings.HasPrefix(srv.accept, "text/plain;version=0.0.4") {
		t.Errorf("accept header %q", srv.accept)
	}
}

func TestServerScraperFailureDropsStaleSeries(t *testing.T) {
	srv := newFakeServer(t, sample(t))
	h := newHarness(t, ScraperOptions{})
	target := serverTarget("llama", srv)
	target.Model = "configured-model"
	h.Apply(&config.Config{Targets: []config.Target{target}})
	h.wait(t, "llama")

	tests := []struct {
		name    string
		status  int
		body    string
		success string
		running bool
		errPart string
	}{
		{"http error", http.StatusInternalServerError, "oops", "0", false, "HTTP status 500"},
		{"recovers", http.StatusOK, sample(t), "1", true, ""},
		{"parse error", http.StatusOK, "not a metric line {{{\n", "0", false, "parse metrics"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv.set(tc.status, "text/plain; version=0.0.4", tc.body)
			h.tick(t, "llama")
			want := successHelpLines + `vllm_probe_server_scrape_success{target="llama"} ` + tc.success + "\n"
			if tc.running {
				want += runningHelpLines + `vllm:num_requests_running{model_name="meta-llama/Llama-3.1-8B-Instruct",target="llama"} 8` + "\n"
			}
			if err := testutil.CollectAndCompare(h, strings.NewReader(want), metricname.ServerScrapeSuccess, "vllm:num_requests_running"); err != nil {
				t.Error(err)
			}
			st := h.State("llama", "")
			if !strings.Contains(st.Err, tc.errPart) || (tc.errPart == "") != st.Success {
				t.Errorf("state %+v, want error containing %q", st, tc.errPart)
			}
			if st.Model != "configured-model" {
				t.Errorf("model %q, want the configured one", st.Model)
			}
		})
	}
	t.Run("server gone", func(t *testing.T) {
		srv.Close()
		h.tick(t, "llama")
		if n := testutil.CollectAndCount(h, "vllm:num_requests_running", "vllm:request_success_total", "vllm:time_to_first_token_seconds"); n != 0 {
			t.Errorf("%d stale server series", n)
		}
		if st := h.State("llama", ""); st.Success {
			t.Errorf("state %+v", st)
		}
	})
}

func TestServerScraperRelabelling(t *testing.T) {
	body := lines(
		"# TYPE vllm:num_requests_waiting gauge",
		`vllm:num_requests_waiting 1`,
		"# TYPE vllm:kv_cache_usage_perc gauge",
		`vllm:kv_cache_usage_perc{engine="0"} 0.5`,
		`vllm:kv_cache_usage_perc{engine="1"} 0.25`,
		`vllm:kv_cache_usage_perc{engine="2"} 0.75`,
		"# TYPE vllm:num_requests_running gauge",
		`vllm:num_requests_running{target="inner",exported_target="x"} 3`,
	)
	srv := newFakeServer(t, body)
	h := newHarness(t, ScraperOptions{MaxSeriesPerTarget: 4})
	h.Apply(&config.Config{Targets: []config.Target{serverTarget("a", srv)}})
	h.wait(t, "a")
	want := lines(
		"# HELP vllm:kv_cache_usage_perc ", "# TYPE vllm:kv_cache_usage_perc gauge",
		`vllm:kv_cache_usage_perc{engine="0",target="a"} 0.5`,
		`vllm:kv_cache_usage_perc{engine="1",target="a"} 0.25`,
		`vllm:kv_cache_usage_perc{engine="2",target="a"} 0.75`,
		"# HELP vllm:num_requests_running ", "# TYPE vllm:num_requests_running gauge",
		`vllm:num_requests_running{exported_exported_target="inner",exported_target="x",target="a"} 3`,
		"# HELP vllm_prober_server_series_dropped_total "+metricname.ServerSeriesDroppedHelp, "# TYPE vllm_prober_server_series_dropped_total counter",
		`vllm_prober_server_series_dropped_total{reason="conflict",target="a"} 0`,
		`vllm_prober_server_series_dropped_total{reason="duplicate",target="a"} 0`,
		`vllm_prober_server_series_dropped_total{reason="invalid_label",target="a"} 0`,
		`vllm_prober_server_series_dropped_total{reason="invalid_name",target="a"} 0`,
		`vllm_prober_server_series_dropped_total{reason="limit",target="a"} 1`,
		`vllm_prober_server_series_dropped_total{reason="reserved",target="a"} 0`,
		`vllm_prober_server_series_dropped_total{reason="unsupported_type",target="a"} 0`,
	)
	if err := testutil.CollectAndCompare(h, strings.NewReader(want), "vllm:num_requests_waiting", "vllm:kv_cache_usage_perc", "vllm:num_requests_running", metricname.ServerSeriesDropped); err != nil {
		t.Error(err)
	}
}

func TestServerScraperCollisions(t *testing.T) {
	gauge := lines("# TYPE vllm:thing gauge", "vllm:thing 1", "# TYPE vllm:hist histogram", `vllm:hist_bucket{le="+Inf"} 1`, "vllm:hist_count 1", "vllm:hist_sum 1")
	counter := lines("# TYPE vllm:thing counter", "vllm:thing 2", "# TYPE vllm:hist_count gauge", "vllm:hist_count 5",
		"# TYPE vllm_probe_requests_total counter", "vllm_probe_requests_total 9")
	a, b := newFakeServer(t, gauge), newFakeServer(t, counter)
	h := newHarness(t, ScraperOptions{})
	cfg := &config.Config{Targets: []config.Target{serverTarget("a", a)}}
	cfg.Global.ServerMetrics.Allow = config.Regexp{Source: ".*"}
	h.Apply(cfg)
	h.wait(t, "a")
	cfg.Targets = append(cfg.Targets, serverTarget("b", b))
	h.Apply(cfg)
	h.wait(t, "b")

	mfs := promtext.Gather(t, h) // a pedantic registry: any inconsistency is an error
	if got := len(mfs["vllm:thing"].GetMetric()); got != 1 {
		t.Errorf("vllm:thing has %d series, want only target a's", got)
	}
	if _, ok := mfs["vllm:hist_count"]; ok {
		t.Error("vllm:hist_count collides with histogram vllm:hist and must be dropped")
	}
	for reason, want := range map[string]float64{dropConflict: 2, dropReserved: 1} {
		if got := promtext.Series(t, mfs, metricname.ServerSeriesDropped, "target", "b", "reason", reason).GetCounter().GetValue(); got != want {
			t.Errorf("dropped %s: got %v, want %v", reason, got, want)
		}
	}
}

func TestServerScraperOpenMetrics(t *testing.T) {
	body := lines(
		"# TYPE vllm:request_success counter",
		"# HELP vllm:request_success Count of successfully processed requests.",
		`vllm:request_success_total{finished_reason="stop"} 4.0`,
		`vllm:request_success_created{finished_reason="stop"} 1.7e9`,
		"# EOF",
	)
	srv := newFakeServer(t, body)
	srv.set(http.StatusOK, "application/openmetrics-text; version=1.0.0; charset=utf-8", body)
	h := newHarness(t, ScraperOptions{})
	h.Apply(&config.Config{Targets: []config.Target{serverTarget("om", srv)}})
	h.wait(t, "om")
	want := successTotalLines + `vllm:request_success_total{finished_reason="stop",target="om"} 4` + "\n"
	if err := testutil.CollectAndCompare(h, strings.NewReader(want), "vllm:request_success_total"); err != nil {
		t.Errorf("%v (state %+v)", err, h.State("om", ""))
	}

	t.Run("oversized openmetrics body refused", func(t *testing.T) {
		big := "# HELP vllm:x " + strings.Repeat("a", maxOpenMetricsBytes) + "\n" + body
		srv.set(http.StatusOK, "application/openmetrics-text; version=1.0.0; charset=utf-8", big)
		h.tick(t, "om")
		if st := h.State("om", ""); st.Success || !strings.Contains(st.Err, "byte limit") {
			t.Errorf("state %+v", st)
		}
	})
}

func TestServerScraperApply(t *testing.T) {
	srv := newFakeServer(t, sample(t))
	h := newHarness(t, ScraperOptions{})
	noMetrics := serverTarget("info-only", srv)
	noMetrics.MetricsPath = ""
	h.Apply(&config.Config{Targets: []config.Target{serverTarget("a", srv), serverTarget("b", srv), noMetrics}})
	h.wait(t, "a", "b", "info-only")
	if got := promtext.Series(t, promtext.Gather(t, h), metricname.TargetInfo, "target", "info-only").GetGauge().GetValue(); got != 1 {
		t.Errorf("target_info of a target without metrics_path: %v", got)
	}

	tests := []struct {
		name    string
		targets []config.Target
		want    string
	}{
		{"metrics_path \"\" exports target_info but no scrape series", nil, successHelpLines + lines(
			`vllm_probe_server_scrape_success{target="a"} 1`, `vllm_probe_server_scrape_success{target="b"} 1`)},
		{"removed target's series disappear", []config.Target{serverTarget("a", srv)}, successHelpLines + lines(
			`vllm_probe_server_scrape_success{target="a"} 1`)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.targets != nil {
				h.Apply(&config.Config{Targets: tc.targets})
			}
			if err := testutil.CollectAndCompare(h, strings.NewReader(tc.want), metricname.ServerScrapeSuccess); err != nil {
				t.Error(err)
			}
		})
	}
	if n := testutil.CollectAndCount(h, "vllm:num_requests_running"); n != 1 {
		t.Errorf("%d vllm:num_requests_running series, want target a's only", n)
	}
	if st := h.State("b", ""); st != (ScrapeState{}) {
		t.Errorf("removed target state %+v", st)
	}
	h.Stop()
	if n := testutil.CollectAndCount(h); n != 0 {
		t.Errorf("%d series after Stop", n)
	}
}

// TestServerScraperFollowsPairs checks the scraper as a sink of the
// engine: a target is scraped while one of its pairs runs, a change of a
// probe leaves its loop alone, a change of the settings restarts it.
func TestServerScraperFollowsPairs(t *testing.T) {
	srv := newFakeServer(t, sample(t))
	h := newHarness(t, ScraperOptions{})
	target := serverTarget("a", srv)
	pair := func(probe string, rate float64) config.Pair {
		return config.Pair{Key: config.PairKey{Target: "a", Probe: probe}, Target: target, Probe: config.Probe{Name: probe, Rate: rate}}
	}
	loop := func() *targetLoop {
		h.mu.RLock()
		defer h.mu.RUnlock()
		return h.loops[scrapeKey{target: "a"}]
	}
	h.PairStarted(pair("p", 1))
	h.PairStarted(pair("q", 1))
	h.wait(t, "a")
	first := loop()

	steps := []struct {
		name    string
		do      func()
		scraped bool
		same    bool // the loop is the first one
	}{
		{"a probe change keeps the loop", func() { h.PairStarted(pair("p", 2)) }, true, true},
		{"one pair stopped keeps the target", func() { h.PairStopped(pair("p", 2).Key) }, true, true},
		{"unchanged settings keep the loop", func() { h.Configure(config.ServerMetrics{}) }, true, true},
		{"changed settings restart the loop", func() { h.Configure(config.ServerMetrics{Interval: model.Duration(time.Minute)}) }, true, false},
		{"the last pair stopped stops the target", func() { h.PairStopped(pair("q", 1).Key) }, false, false},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			st.do()
			l := loop()
			if (l != nil) != st.scraped {
				t.Fatalf("target scraped = %v, want %v", l != nil, st.scraped)
			}
			if (l == first) != st.same {
				t.Errorf("same loop = %v, want %v", l == first, st.same)
			}
		})
	}
	if st := h.State("a", ""); st != (ScrapeState{}) {
		t.Errorf("state of a target without pairs: %+v", st)
	}
}

func TestServerScraperLogsDropsOnce(t *testing.T) {
	srv := newFakeServer(t, lines("# TYPE vllm_probe_fake gauge", "vllm_probe_fake 1", "# TYPE vllm:ok gauge", "vllm:ok 1"))
	logs := &countingHandler{}
	h := newHarness(t, ScraperOptions{Logger: slog.New(logs)})
	cfg := &config.Config{Targets: []config.Target{serverTarget("a", srv)}}
	cfg.Global.ServerMetrics.Allow = config.Regexp{Source: ".*"}
	h.Apply(cfg)
	h.wait(t, "a")
	h.tick(t, "a")
	h.tick(t, "a")
	if got := promtext.CounterValue(t, h, metricname.ServerSeriesDropped, "reason", dropReserved); got != 3 {
		t.Errorf("dropped reserved %v, want 3 (one per scrape)", got)
	}
	if got := logs.count("dropping scraped server series"); got != 1 {
		t.Errorf("logged %d times, want once", got)
	}
	if n := testutil.CollectAndCount(h, "vllm:ok"); n != 1 {
		t.Errorf("vllm:ok series %d, want 1", n)
	}
}

// TestServerScraperSharesAllowRegexp: the targets' loops share one
// compiled allow regexp (~26 KB each when every loop compiled its own,
// docs/BENCHMARKS.md, "1,000 pairs"); a changed allow gives every
// restarted loop the new one.
func TestServerScraperSharesAllowRegexp(t *testing.T) {
	h := newHarness(t, ScraperOptions{})
	names := []string{"a", "b", "c"}
	for _, name := range names {
		h.PairStarted(config.Pair{Key: config.PairKey{Target: name, Probe: "p"},
			Target: config.Target{Name: name, URL: "http://127.0.0.1:1", MetricsPath: "/metrics"}})
	}
	allows := func() map[*regexp.Regexp][]string {
		h.mu.RLock()
		defer h.mu.RUnlock()
		out := map[*regexp.Regexp][]string{}
		for _, name := range names {
			re := h.loops[scrapeKey{target: name}].allow
			out[re] = append(out[re], re.String())
		}
		return out
	}
	if got := allows(); len(got) != 1 {
		t.Errorf("%d compiled allow regexps for %d targets, want 1: %v", len(got), len(names), got)
	}
	re, err := config.NewRegexp("vllm:num_requests_running")
	if err != nil {
		t.Fatal(err)
	}
	h.Configure(config.ServerMetrics{Allow: re})
	got := allows()
	if len(got) != 1 {
		t.Fatalf("%d compiled allow regexps after a change, want 1: %v", len(got), got)
	}
	for re := range got {
		if want := "^(?:vllm:num_requests_running)$"; re.String() != want {
			t.Errorf("allow after a change %q, want %q", re.String(), want)
		}
	}
}
