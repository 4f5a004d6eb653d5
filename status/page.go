package status

import (
	"embed"
	"fmt"
	"html/template"
	"io"
	"strings"
	"time"

	"github.com/vllm-prober/vllm-prober/collector"
	"github.com/vllm-prober/vllm-prober/probe/ledger"
)

//go:embed page.html
var pageFS embed.FS

var pageTmpl = template.Must(template.New("page.html").Funcs(template.FuncMap{
	"ms":   FormatMs,
	"pct":  FormatPct,
	"rate": func(v float64) string { return fmt.Sprintf("%.3f", v) },
	"ago":  func(now, t time.Time) string { return now.Sub(t).Round(time.Second).String() },
}).ParseFS(pageFS, "page.html"))

// TargetState is one target's row on the status page.
type TargetState struct {
	Name   string
	Scrape collector.ScrapeState
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
	return pageTmpl.Execute(w, p)
}

// FormatMs formats a duration in milliseconds, or a dash when unmeasured.
func FormatMs(d time.Duration) string {
	if d <= 0 {
		return "–"
	}
	return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond))
}

// FormatPct formats a ratio as a percentage, or a dash when unknown.
func FormatPct(v float64) string {
	if v < 0 {
		return "–"
	}
	return fmt.Sprintf("%.2f%%", 100*v)
}
