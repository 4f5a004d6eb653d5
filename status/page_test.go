package status

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"

	"github.com/vllm-prober/vllm-prober/collector/server"
	"github.com/vllm-prober/vllm-prober/config"
	"github.com/vllm-prober/vllm-prober/probe"
	"github.com/vllm-prober/vllm-prober/probe/ledger"
)

func TestRenderMetricsLink(t *testing.T) {
	tests := []struct {
		name, path, want string
	}{
		{"default", "", `href="metrics"`},
		{"telemetry path", "/m", `href="m"`},
		{"nested telemetry path", "/x/metrics", `href="x/metrics"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var sb strings.Builder
			if err := Render(&sb, Page{Now: time.Unix(0, 0), MetricsPath: tc.path}); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(sb.String(), tc.want) {
				t.Errorf("page lacks %s", tc.want)
			}
		})
	}
}

// fullTracker returns a tracker with n pairs, each with a request ending
// every 5 seconds of the last hour, so every minute of every chart has
// data.
func fullTracker(n int) (*Tracker, *fakeNow) {
	clock := &fakeNow{t: time.Unix(1_800_000_000, 0)}
	tr := NewTracker(TrackerOptions{Now: clock.now})
	var probes []string
	for i := range n {
		probes = append(probes, fmt.Sprintf("probe-with-a-long-name-%02d", i))
	}
	cfg := trackerConfig(probes...)
	for i := range cfg.Probes {
		cfg.Probes[i].SLO = config.SLO{TTFT: model.Duration(200 * time.Millisecond), TPOT: model.Duration(50 * time.Millisecond)}
	}
	syncPairs(tr, cfg)
	for s := 0; s < 3600; s += 5 {
		clock.t = clock.t.Add(5 * time.Second)
		for i, p := range probes {
			r := probe.Result{Target: "t", Probe: p, Disposition: probe.Accepted, TTFT: time.Duration(50+i+s%100) * time.Millisecond,
				ITLs: []time.Duration{10 * time.Millisecond, 30 * time.Millisecond}, Phases: probe.PhaseTimes{probe.PhaseHeaders: time.Millisecond}}
			if s%60 == 0 {
				r.Disposition, r.Reason, r.Error = probe.ServerFailure, probe.ReasonHTTP5xx, "HTTP 500: <overloaded>"
			}
			tr.Offered(config.PairKey{Target: "t", Probe: p})
			tr.Finished(&r)
		}
	}
	return tr, clock
}

// TestRenderChartsBounded renders the status page of 50 pairs with a full
// hour each: every pair gets its charts with drawn lines, and the page
// stays small enough to refresh every 5 seconds.
func TestRenderChartsBounded(t *testing.T) {
	tr, clock := fullTracker(50)
	var sb strings.Builder
	if err := Render(&sb, Page{Now: clock.t, Window: tr.Window(), Pairs: tr.Snapshot()}); err != nil {
		t.Fatal(err)
	}
	page := sb.String()
	if n := strings.Count(page, `<svg class="chart"`); n != 150 {
		t.Errorf("%d charts, want 3 for each of 50 pairs", n)
	}
	if n := strings.Count(page, `<path class="series" d="M`); n != 250 {
		t.Errorf("%d drawn series, want 5 for each of 50 pairs", n)
	}
	if n := strings.Count(page, `<path class="rule"`); n != 150 {
		t.Errorf("%d threshold lines, want TTFT and TPOT SLOs and the objective for each of 50 pairs", n)
	}
	if n := strings.Count(page, `<svg class="bar"`); n != 50 {
		t.Errorf("%d disposition bars, want 50", n)
	}
	const maxBytes = 600 << 10
	t.Logf("status page of 50 pairs: %d bytes", len(page))
	if len(page) > maxBytes {
		t.Errorf("status page of 50 pairs is %d bytes, want at most %d", len(page), maxBytes)
	}
}

// TestRenderManyPairsWithoutCharts: past MaxChartPairs the page keeps one
// table row per pair, each linking its detail page, and draws no charts,
// so it grows by about a kilobyte per pair instead of about five.
func TestRenderManyPairsWithoutCharts(t *testing.T) {
	for _, n := range []int{MaxChartPairs, MaxChartPairs + 1} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			tr, clock := fullTracker(n)
			pairs := tr.Snapshot()
			var sb strings.Builder
			if err := Render(&sb, Page{Now: clock.t, Window: tr.Window(), Pairs: pairs}); err != nil {
				t.Fatal(err)
			}
			// The snapshot skips the hours the page does not draw; the
			// pair's own page still gets its hour.
			detail, _, _ := tr.Pair(config.PairKey{Target: "t", Probe: pairs[0].Probe})
			if hour := pairs[0].Minutes != nil; hour != (n <= MaxChartPairs) || len(detail.Minutes) != 60 {
				t.Errorf("snapshot has the hour: %v; pair page's hour: %d minutes, want 60", hour, len(detail.Minutes))
			}
			page := sb.String()
			charts, rows := strings.Count(page, `<svg class="chart"`), strings.Count(page, `<tr class="pair"`)
			links := strings.Count(page, `href="pair?probe=probe-with-a-long-name-`)
			note := strings.Contains(page, fmt.Sprintf(`<p id="charts-elsewhere">%d pairs are more than %d`, n, MaxChartPairs))
			t.Logf("status page of %d pairs: %d bytes", n, len(page))
			if n <= MaxChartPairs {
				if charts != 3*n || note {
					t.Errorf("%d charts (note shown %v), want 3 for each of %d pairs and no note", charts, note, n)
				}
				return
			}
			if charts != 0 || !note || rows != n || links != n {
				t.Errorf("%d charts, note shown %v, %d table rows, %d pair links; want 0, true, %d, %d", charts, note, rows, links, n, n)
			}
			if perPair := len(page) / n; perPair > 1500 {
				t.Errorf("status page of %d pairs is %d bytes, %d per pair, want at most 1500", n, len(page), perPair)
			}
		})
	}
}

func TestRenderPair(t *testing.T) {
	tr, clock := fullTracker(1)
	ps, recent, ok := tr.Pair(config.PairKey{Target: "t", Probe: "probe-with-a-long-name-00"})
	if !ok {
		t.Fatal("pair not found")
	}
	rec := ledger.NewRecord(&probe.Result{Target: "t", Probe: ps.Probe, Disposition: probe.ServerFailure,
		Reason: probe.ReasonHTTP5xx, HTTPStatus: 500, Error: "HTTP 500: <overloaded>"}, "")
	var sb strings.Builder
	err := RenderPair(&sb, PairPage{Now: clock.t, Stats: ps, Recent: recent, Failures: []ledger.Record{rec}})
	if err != nil {
		t.Fatal(err)
	}
	page := sb.String()
	for _, want := range []string{`viewBox="0 0 560 220"`, "TTFT SLO 200 ms", "TPOT SLO 50 ms", "objective 99.00%",
		"<th>headers</th>", "<td>1.0 ms</td>", "HTTP 500: &lt;overloaded&gt;", "server_failure&nbsp;"} {
		if !strings.Contains(page, want) {
			t.Errorf("pair page lacks %q", want)
		}
	}
	if n := strings.Count(page, "<tr><td class=\"l\">"); n != recentRequests+1 {
		t.Errorf("%d request and failure rows, want %d recent and 1 failure", n, recentRequests)
	}
	if _, _, ok := tr.Pair(config.PairKey{Target: "t", Probe: "nope"}); ok {
		t.Error("an unknown pair was found")
	}
}

// TestRenderPairRecentAnswer: each recent request shows its TTFA,
// reasoning tokens and tool calls from its Result, and "–" for a request
// whose Result has none, newest first.
func TestRenderPairRecentAnswer(t *testing.T) {
	tr := NewTracker(TrackerOptions{})
	syncPairs(tr, trackerConfig("p"))
	results := []probe.Result{
		{Disposition: probe.Accepted, TTFT: 100 * time.Millisecond, TTFA: 412500 * time.Microsecond, E2EL: time.Second, ReasoningTokens: 37,
			ToolCalls: []probe.ToolCall{{ID: "call-1", Name: "get_weather", Arguments: `{"city":"Oslo"}`}, {ID: "call-2", Name: "get_time"}}},
		{Disposition: probe.Accepted, TTFT: 90 * time.Millisecond, TTFA: 90 * time.Millisecond, E2EL: time.Second,
			ToolCalls: []probe.ToolCall{{ID: "call-3", Name: "lookup"}}},
		{Disposition: probe.Accepted, TTFT: 50 * time.Millisecond, E2EL: time.Second},
	}
	offerAndFinish(tr, results)
	ps, recent, _ := tr.Pair(config.PairKey{Target: "t", Probe: "p"})
	var sb strings.Builder
	if err := RenderPair(&sb, PairPage{Now: time.Unix(0, 0), Stats: ps, Recent: recent}); err != nil {
		t.Fatal(err)
	}
	page := sb.String()
	for _, want := range []string{"<th>TTFA</th>", "<th>reasoning tokens</th>", `<th class="l">tool calls</th>`} {
		if !strings.Contains(page, want) {
			t.Errorf("recent table lacks header %q", want)
		}
	}
	cells := regexp.MustCompile(`<td class="ttfa">([^<]*)</td>.*\n<td class="reasoning">([^<]*)</td><td class="l tools">([^<]*)</td>`).FindAllStringSubmatch(page, -1)
	want := [][3]string{ // newest first
		{"–", "–", "–"},
		{"90.0 ms", "–", "1 (lookup)"},
		{"412.5 ms", "37", "2 (get_weather, …)"},
	}
	if len(cells) != len(want) {
		t.Fatalf("%d recent rows with TTFA, reasoning and tool cells, want %d:\n%s", len(cells), len(want), page)
	}
	for i, w := range want {
		if got := [3]string{cells[i][1], cells[i][2], cells[i][3]}; got != w {
			t.Errorf("row %d (TTFA, reasoning tokens, tool calls) = %q, want %q", i, got, w)
		}
	}
}

// TestRenderPairServerTTFT: the server's TTFT stands next to the
// client's, or the reason it is missing does.
func TestRenderPairServerTTFT(t *testing.T) {
	tr, clock := fullTracker(1)
	ps, _, _ := tr.Pair(config.PairKey{Target: "t", Probe: "probe-with-a-long-name-00"})
	from := time.Date(2026, 11, 29, 12, 1, 0, 0, time.UTC)
	tests := []struct {
		name   string
		server server.ServerTTFT
		want   []string
	}{
		{"scraped", server.ServerTTFT{Model: "sim-llama", From: from, To: from.Add(4 * time.Minute), Count: 4,
			P50: 416667 * time.Microsecond, P99: 740 * time.Millisecond}, []string{
			"<td class=\"l wrap\">server (model sim-llama, all clients)</td><td>4</td><td class=\"server-ttft-p50\">416.7 ms</td><td>740.0 ms</td>",
			"vllm:time_to_first_token_seconds, bucket increases between the scrapes of 12:01:00 and 12:05:00"}},
		{"not scraped", server.ServerTTFT{Model: "sim-llama", Missing: "the target's server metrics are not scraped (no metrics_path)"}, []string{
			"server (model sim-llama, all clients)</td><td colspan=\"3\" class=\"muted\">–</td><td class=\"l wrap muted\">the target&#39;s server metrics are not scraped (no metrics_path)</td>"}},
		{"model unknown", server.ServerTTFT{Missing: "the target's model is not known yet"}, []string{"server (model unknown, all clients)"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var sb strings.Builder
			if err := RenderPair(&sb, PairPage{Now: clock.t, Stats: ps, ServerTTFT: tc.server}); err != nil {
				t.Fatal(err)
			}
			page := sb.String()
			client := fmt.Sprintf("<td class=\"l wrap\">client (this probe)</td><td>%d</td><td>%s</td><td>%s</td>", ps.WindowSamplesTTFT, FormatMs(ps.TTFTP50), FormatMs(ps.TTFTP99))
			for _, want := range append(tc.want, client) {
				if !strings.Contains(page, want) {
					t.Errorf("pair page lacks %q", want)
				}
			}
		})
	}
}

// TestRenderPairRecentError: a recent request that failed shows its error
// in its row of the recent table, escaped, and an accepted one shows none.
func TestRenderPairRecentError(t *testing.T) {
	tr := NewTracker(TrackerOptions{})
	syncPairs(tr, trackerConfig("p"))
	offerAndFinish(tr, []probe.Result{
		{Disposition: probe.Accepted, TTFT: 50 * time.Millisecond, E2EL: time.Second},
		{Disposition: probe.ServerFailure, Reason: probe.ReasonHTTP5xx, HTTPStatus: 503, Error: "HTTP 503: <queue full>"},
	})
	ps, recent, _ := tr.Pair(config.PairKey{Target: "t", Probe: "p"})
	var sb strings.Builder
	if err := RenderPair(&sb, PairPage{Now: time.Unix(0, 0), Stats: ps, Recent: recent}); err != nil {
		t.Fatal(err)
	}
	page := sb.String()
	start := strings.Index(page, `<table id="recent">`)
	end := strings.Index(page[start:], "</table>")
	if start < 0 || end < 0 {
		t.Fatalf("no recent table:\n%s", page)
	}
	table := page[start : start+end]
	rows := strings.Split(table, "<tr>")[2:] // after the header row
	if len(rows) != 2 {
		t.Fatalf("%d recent rows, want 2:\n%s", len(rows), table)
	}
	if want := `<div class="err">HTTP 503: &lt;queue full&gt;</div>`; !strings.Contains(rows[0], want) {
		t.Errorf("the failed request's row lacks %q:\n%s", want, rows[0])
	}
	if strings.Contains(rows[1], `class="err"`) {
		t.Errorf("the accepted request's row shows an error:\n%s", rows[1])
	}
}
