package status

import (
	"embed"
	"fmt"
	"html/template"
	"io"
	"net/url"
	"strings"
	"time"

	"github.com/prometheus/common/model"

	"github.com/vllm-prober/vllm-prober/collector/server"
	"github.com/vllm-prober/vllm-prober/probe"
	"github.com/vllm-prober/vllm-prober/probe/ledger"
)

//go:embed page.html pair.html
var pageFS embed.FS

// templates holds the status page and the pair detail page; page.html
// defines the head (with the style) both use.
var templates = template.Must(template.New("page.html").Funcs(template.FuncMap{
	"ms":          FormatMs,
	"msn":         formatMsNumber,
	"pct":         FormatPct,
	"rate":        formatRate,
	"pairRows":    pairRows,
	"ago":         func(now, t time.Time) string { return now.Sub(t).Round(time.Second).String() },
	"dur":         func(d time.Duration) string { return d.Round(time.Second).String() },
	"slo":         func(d model.Duration) string { return FormatMs(time.Duration(d)) },
	"charts":      func(p PairStats) (template.HTML, error) { return pairCharts(p, smallChart) },
	"chartsLarge": func(p PairStats) (template.HTML, error) { return pairCharts(p, largeChart) },
	"replicaSuffix": func(replica string) string {
		if replica == "" {
			return ""
		}
		return " @ " + replica
	},
	"pairHref": func(target, probe, replica string) string { return "pair?" + pairQuery(target, probe, replica) },
	"resultsHref": func(target, probe, replica string) string {
		return "api/v1/results?" + pairQuery(target, probe, replica)
	},
}).ParseFS(pageFS, "page.html", "pair.html"))

// pairQuery is the query string naming a pair, relative links keeping the
// pages usable behind a path prefix.
func pairQuery(target, probe, replica string) string {
	q := url.Values{"target": {target}, "probe": {probe}}
	if replica != "" {
		q.Set("replica", replica)
	}
	return q.Encode()
}

// TargetState is one target's row on the status page: a static target, a
// fleet's gateway (Replica "") or one of its discovered replicas.
type TargetState struct {
	Name    string
	Replica string
	Scrape  server.ScrapeState
	// Discovery is set on the first row of a target with discovery.
	Discovery *DiscoveryState
}

// DiscoveryState is what a target's replica discovery last did.
type DiscoveryState struct {
	Mechanism string
	Replicas  int       // replicas probed
	Dropped   int       // replicas found beyond max_replicas, not probed
	Updated   time.Time // the last successful refresh; zero before the first
	Err       string    // the last failed refresh's error; "" when the last refresh succeeded
	ErrAt     time.Time // when it failed
}

// Page is everything the status page shows. It holds no configuration
// values beyond names, so no secret can reach it.
type Page struct {
	Version   string
	Now       time.Time
	Window    time.Duration // the span of the windowed columns
	Targets   []TargetState
	Pairs     []PairStats
	Failures  []ledger.Record
	LedgerOK  bool
	LedgerErr uint64
	// LedgerReopens counts the ledger file found deleted or replaced and
	// opened again.
	LedgerReopens uint64
	// MetricsPath is --web.telemetry-path; the Metrics link uses it
	// ("/metrics" when empty).
	MetricsPath string
}

// MaxChartPairs is the most pairs whose charts of the last hour the
// status page draws; with more, each pair's charts are on its own page
// (/pair), so the page stays light enough to refresh every 5 seconds
// (about 5 KB of SVG per pair; docs/design.md, Status page).
const MaxChartPairs = 100

// ChartsShown reports whether the page draws every pair's charts.
func (p Page) ChartsShown() bool { return len(p.Pairs) <= MaxChartPairs }

// MaxChartPairs is the package's MaxChartPairs, for the template.
func (Page) MaxChartPairs() int { return MaxChartPairs }

// MetricsHref is the Metrics link, relative to the page so it also works
// behind a path prefix.
func (p Page) MetricsHref() string {
	if path := strings.TrimLeft(p.MetricsPath, "/"); path != "" {
		return path
	}
	return "metrics"
}

// Render writes the status page as HTML.
func Render(w io.Writer, p Page) error {
	return templates.ExecuteTemplate(w, "page.html", p)
}

// PairPage is everything the detail page of one (target, probe) pair
// shows.
type PairPage struct {
	Version string
	Now     time.Time
	Stats   PairStats
	// Recent is the pair's last requests, newest first (Tracker.Pair).
	Recent []RequestView
	// Failures is the pair's last failures with their error text.
	Failures []ledger.Record
	// Target is the pair's target's server scrape state.
	Target TargetState
	// Replicas are the replicas probed behind the pair's gateway (the
	// pair is the gateway's), each a link to its own pair's page.
	Replicas []string
	// ServerTTFT is the server's TTFT of the pair's model over the
	// window of Stats, from its scraped histogram, shown next to the
	// client's TTFT.
	ServerTTFT server.ServerTTFT
}

// Phases lists the HTTP phases in the order a request goes through them.
func (PairPage) Phases() []string { return probe.Phases }

// RenderPair writes a pair's detail page as HTML.
func RenderPair(w io.Writer, p PairPage) error {
	return templates.ExecuteTemplate(w, "pair.html", p)
}

// FormatMs formats a duration in milliseconds, or a dash when unmeasured.
func FormatMs(d time.Duration) string {
	if d <= 0 {
		return "–"
	}
	return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond))
}

// formatMsNumber formats a duration in milliseconds without the unit, or
// a dash when unmeasured.
func formatMsNumber(d time.Duration) string { return strings.TrimSuffix(FormatMs(d), " ms") }

// formatRate formats requests per second.
func formatRate(v float64) string { return fmt.Sprintf("%.3f", v) }

// FormatPct formats a ratio as a percentage, or a dash when unknown.
func FormatPct(v float64) string {
	if v < 0 {
		return "–"
	}
	return fmt.Sprintf("%.2f%%", 100*v)
}
