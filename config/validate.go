package config

import (
	"fmt"
	"math"
	"net/url"
	"regexp"
	"strings"

	"github.com/prometheus/common/model"

	"github.com/vllm-prober/vllm-prober/config/strictyaml"
	"github.com/vllm-prober/vllm-prober/internal/redact"
)

// NamePattern is the rule for target and probe names: they become label
// values, URL query values and parts of alert names, so they stay short
// and plain.
var NamePattern = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_.-]{0,63}$`)

// validator checks a decoded Config; problems carry the line of the field
// (or of its closest written ancestor).
type validator struct {
	p   *strictyaml.Problems
	dir string
}

func (v *validator) config(c *Config) {
	v.global(&c.Global)
	if len(c.Targets) == 0 {
		v.p.Fail("targets", "at least one target is required, got none")
	}
	if len(c.Probes) == 0 {
		v.p.Fail("probes", "at least one probe is required, got none")
	}
	targets := map[string]int{}
	for i := range c.Targets {
		v.target(&c.Targets[i], fmt.Sprintf("targets[%d]", i), targets)
	}
	probes := map[string]int{}
	for i := range c.Probes {
		path := fmt.Sprintf("probes[%d]", i)
		v.probe(&c.Probes[i], path, probes)
		v.probeHistograms(&c.Probes[i], c.Global, path)
	}
	for i, t := range c.Targets {
		v.references(t, fmt.Sprintf("targets[%d].probes", i), probes)
	}
}

func (v *validator) global(g *Global) {
	l := g.Ledger
	v.atLeast("global.ledger.max_size_mb", l.MaxSizeMB, 1)
	v.atLeast("global.ledger.max_files", l.MaxFiles, 1)
	switch l.RecordText {
	case RecordTextNone, RecordTextFailures, RecordTextAll:
	default:
		v.p.Fail("global.ledger.record_text", "must be one of none, failures, all, got %s", strictyaml.Quote(l.RecordText))
	}
	v.atLeast("global.history_limit", g.HistoryLimit, 1)
	v.histograms("global.histograms", g.Histograms)
	sm := &g.ServerMetrics
	v.positive("global.server_metrics.interval", sm.Interval)
	v.positive("global.server_metrics.timeout", sm.Timeout)
	if sm.Timeout > sm.Interval && sm.Interval > 0 {
		v.p.Fail("global.server_metrics.timeout", "must be <= interval (%s), got %s", sm.Interval, sm.Timeout)
	}
	if sm.Allow.Source == "" {
		sm.Allow.Source = DefaultServerMetricsAllow
	}
	re, err := anchored(sm.Allow.Source)
	if err != nil {
		v.p.Fail("global.server_metrics.allow", "%v, got %s", err, strictyaml.Quote(sm.Allow.Source))
		return
	}
	sm.Allow = re
}

// name checks a target or probe name: label-safe and unique.
func (v *validator) name(path, name string, seen map[string]int) {
	if !NamePattern.MatchString(name) {
		v.p.Fail(path, "must match %s, got %s", NamePattern, strictyaml.Quote(name))
		return
	}
	if first, dup := seen[name]; dup {
		v.p.Fail(path, "duplicate name, first used at line %d, got %s", first, strictyaml.Quote(name))
		return
	}
	seen[name] = v.p.LineOf(path)
}

func (v *validator) target(t *Target, path string, seen map[string]int) {
	v.name(path+".name", t.Name, seen)
	switch u, msg := checkBaseURL(t.URL); {
	case t.URL == "" && t.Discovery != nil:
		// A fleet without a gateway: only its replicas are probed.
	case t.URL == "":
		v.p.Fail(path, "needs url, discovery or both, got neither")
	case msg != "":
		v.p.Fail(path+".url", "%s, got %s", msg, strictyaml.Quote(redact.URL(t.URL)))
	default:
		t.URL = u
	}
	v.fleet(t, path)
	if t.MetricsPath != "" && !strings.HasPrefix(t.MetricsPath, "/") {
		v.p.Fail(path+".metrics_path", "must start with / (or be \"\" to disable scraping), got %s", strictyaml.Quote(t.MetricsPath))
	}
}

// checkBaseURL returns the normalised base URL (no trailing slash) or a
// reason it is unusable.
func checkBaseURL(s string) (string, string) {
	u, err := url.Parse(s)
	switch {
	case s == "":
		return "", "is required"
	case err != nil:
		return "", "must be a valid URL"
	case u.Scheme != "http" && u.Scheme != "https":
		return "", "must be an absolute http:// or https:// URL"
	case u.Host == "" || u.Hostname() == "":
		return "", "must have a host"
	case u.User != nil:
		return "", "must not contain credentials (use http_client_config)"
	case u.RawQuery != "" || u.Fragment != "" || u.ForceQuery:
		return "", "must not have a query or fragment"
	}
	if base, ok := trimAPIPath(u); ok {
		return "", fmt.Sprintf("must be the server's base URL: the prober appends %s itself; use %s",
			strings.Join(apiPaths[:len(apiPaths)-1], ", "), strictyaml.Quote(base))
	}
	return strings.TrimRight(s, "/"), ""
}

// apiPaths are the paths the prober appends to a target's URL (see
// probe/client/requester.go and probe/client/discovery.go), then the /v1 prefix they
// share: a URL ending in one of them is an OpenAI client's base_url or a
// request URL, and every request would go to /v1/v1/....
var apiPaths = []string{"/v1/chat/completions", "/v1/completions", "/v1/embeddings", "/v1/models", "/v1"}

// trimAPIPath returns u without a trailing API path, and whether it had one.
func trimAPIPath(u *url.URL) (string, bool) {
	p := strings.TrimRight(u.Path, "/")
	for _, suffix := range apiPaths {
		if strings.HasSuffix(p, suffix) {
			base := *u
			base.Path, base.RawPath = strings.TrimSuffix(p, suffix), ""
			return base.String(), true
		}
	}
	return "", false
}

func (v *validator) references(t Target, path string, probes map[string]int) {
	seen := map[string]bool{}
	for i, name := range t.Probes {
		ep := fmt.Sprintf("%s[%d]", path, i)
		switch {
		case seen[name]:
			v.p.Fail(ep, "probe listed twice, got %s", strictyaml.Quote(name))
		case probes[name] == 0:
			v.p.Fail(ep, "no probe with this name, got %s", strictyaml.Quote(name))
		}
		seen[name] = true
	}
}

func (v *validator) atLeast(path string, got, min int) {
	if got < min {
		v.p.Fail(path, "must be >= %d, got %d", min, got)
	}
}

func (v *validator) positive(path string, d model.Duration) {
	if d <= 0 {
		v.p.Fail(path, "must be > 0, got %s", d)
	}
}

// finite reports whether f is a real number (not NaN or infinite).
func finite(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }

// fmtFloat formats a number as it would be written in the file.
func fmtFloat(f float64) string { return fmt.Sprintf("%g", f) }
