// Package dashboards embeds vllm-prober's Grafana dashboards and lists the
// PromQL of every panel, so tests can run each query against a real
// Prometheus.
//
// The dashboards take their data source from the `datasource` template
// variable and filter with the multi-value `target` and `probe` variables
// (regex matchers, "All" = ".*").
package dashboards

import (
	"embed"
	"encoding/json"
	"fmt"
	"io/fs"
	"regexp"
	"sort"
	"strings"
)

//go:embed *.json
var files embed.FS

// Dashboard is one embedded Grafana dashboard file.
type Dashboard struct {
	Name string // file name, e.g. overview.json
	JSON []byte
}

// All returns every embedded dashboard, sorted by file name.
func All() []Dashboard {
	names, _ := fs.Glob(files, "*.json")
	sort.Strings(names)
	out := make([]Dashboard, 0, len(names))
	for _, n := range names {
		b, _ := files.ReadFile(n)
		out = append(out, Dashboard{Name: n, JSON: b})
	}
	return out
}

// Query is one PromQL expression of one panel target.
type Query struct {
	Dashboard string // file name
	PanelID   int
	Panel     string // panel title
	PanelType string // timeseries, heatmap, ...
	// PanelDescription is the panel's description: it names the
	// `histograms:` entry a probe histogram panel needs.
	PanelDescription string
	RefID            string
	Expr             string // with Grafana variables; see Expand
	Instant          bool   // evaluated at one time rather than over a range
}

type panel struct {
	ID      int      `json:"id"`
	Type    string   `json:"type"`
	Title   string   `json:"title"`
	Desc    string   `json:"description"`
	Panels  []panel  `json:"panels"`
	Targets []target `json:"targets"`
}

type target struct {
	RefID   string `json:"refId"`
	Expr    string `json:"expr"`
	Instant bool   `json:"instant"`
}

type dashboardJSON struct {
	Panels []panel `json:"panels"`
}

// Queries lists the expression of every target of every panel, rows'
// nested panels included, in dashboard and panel order.
func Queries() ([]Query, error) {
	var out []Query
	for _, d := range All() {
		var dj dashboardJSON
		if err := json.Unmarshal(d.JSON, &dj); err != nil {
			return nil, fmt.Errorf("parse dashboard %s: %w", d.Name, err)
		}
		var walk func([]panel)
		walk = func(ps []panel) {
			for _, p := range ps {
				for _, t := range p.Targets {
					out = append(out, Query{Dashboard: d.Name, PanelID: p.ID, Panel: p.Title, PanelType: p.Type, PanelDescription: p.Desc,
						RefID: t.RefID, Expr: t.Expr, Instant: t.Instant})
				}
				walk(p.Panels)
			}
		}
		walk(dj.Panels)
	}
	return out, nil
}

var variableRe = regexp.MustCompile(`\$\{(\w+)(?::\w+)?\}|\$(\w+)`)

// Expand substitutes Grafana variables in expr the way Grafana would for
// a query: $name and ${name} from vars. $__rate_interval, $__interval and
// $__range default to "1m", "15s" and "1h" unless vars sets them; target
// and probe default to ".*" (the "All" value). Unknown variables are left
// alone.
func Expand(expr string, vars map[string]string) string {
	defaults := map[string]string{
		"__rate_interval": "1m", "__interval": "15s", "__range": "1h", "target": ".*", "probe": ".*",
	}
	return variableRe.ReplaceAllStringFunc(expr, func(m string) string {
		sub := variableRe.FindStringSubmatch(m)
		name := sub[1] + sub[2]
		if v, ok := vars[name]; ok {
			return v
		}
		if v, ok := defaults[name]; ok {
			return v
		}
		return m
	})
}

// MetricNames returns the metric names an expression reads, without
// duplicates, in order of appearance. It is a small lexer, good enough for
// the dashboards' own queries: it ignores strings, label matchers, range
// selectors, grouping clauses and function names.
func MetricNames(expr string) []string {
	s := stringRe.ReplaceAllString(expr, `""`)
	s = bracesRe.ReplaceAllString(s, "")
	s = rangeRe.ReplaceAllString(s, "")
	s = groupingRe.ReplaceAllString(s, "")
	var out []string
	seen := map[string]bool{}
	for _, loc := range identRe.FindAllStringIndex(s, -1) {
		name := s[loc[0]:loc[1]]
		rest := strings.TrimLeft(s[loc[1]:], " \t\n")
		if strings.HasPrefix(rest, "(") || keywords[strings.ToLower(name)] || seen[name] {
			continue
		}
		if loc[0] > 0 && (isDigit(s[loc[0]-1]) || s[loc[0]-1] == '.') {
			continue // exponent or fraction of a number
		}
		seen[name] = true
		out = append(out, name)
	}
	return out
}

var (
	stringRe   = regexp.MustCompile(`"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'`)
	bracesRe   = regexp.MustCompile(`\{[^}]*\}`)
	rangeRe    = regexp.MustCompile(`\[[^\]]*\]`)
	groupingRe = regexp.MustCompile(`\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)`)
	identRe    = regexp.MustCompile(`[a-zA-Z_:][a-zA-Z0-9_:]*`)
	keywords   = map[string]bool{"and": true, "or": true, "unless": true, "bool": true, "offset": true, "inf": true, "nan": true,
		"group_left": true, "group_right": true, "by": true, "without": true, "on": true, "ignoring": true}
)

func isDigit(c byte) bool { return c >= '0' && c <= '9' }
