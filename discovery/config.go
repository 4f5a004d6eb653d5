// Package discovery finds the replicas of a target: the A, AAAA or SRV
// records of DNS names (a Kubernetes headless Service), Prometheus
// file_sd files, or a Prometheus http_sd endpoint (docs/design.md,
// Fleets). It knows nothing of probes: it hands the current set of
// replicas to whoever runs it, and the configuration turns each replica
// into pairs.
package discovery

import (
	"time"

	promconfig "github.com/prometheus/common/config"
	"github.com/prometheus/common/model"
)

// Mechanism names, the values of the metric label `mechanism`.
const (
	MechanismDNS    = "dns"
	MechanismFileSD = "file_sd"
	MechanismHTTPSD = "http_sd"
)

// DNS record types of DNSConfig.Type.
const (
	TypeA    = "A"
	TypeAAAA = "AAAA"
	TypeSRV  = "SRV"
)

// Default refresh intervals, per mechanism.
const (
	DefaultDNSRefresh    = model.Duration(30 * time.Second)
	DefaultFileSDRefresh = model.Duration(time.Minute)
	DefaultHTTPSDRefresh = model.Duration(time.Minute)
)

// Config is a target's `discovery:` block: exactly one mechanism is set.
// The configuration package validates it where it knows the file's lines.
type Config struct {
	DNS    *DNSConfig    `yaml:"dns,omitempty"`
	FileSD *FileSDConfig `yaml:"file_sd,omitempty"`
	HTTPSD *HTTPSDConfig `yaml:"http_sd,omitempty"`
}

// Mechanism returns the name of the one mechanism set, or "" if none is.
func (c *Config) Mechanism() string {
	switch {
	case c == nil:
		return ""
	case c.DNS != nil:
		return MechanismDNS
	case c.FileSD != nil:
		return MechanismFileSD
	case c.HTTPSD != nil:
		return MechanismHTTPSD
	}
	return ""
}

// RefreshInterval is the interval between refreshes of the one mechanism
// set: its `refresh`, else the mechanism's default; 0 if none is set.
func (c *Config) RefreshInterval() time.Duration {
	switch {
	case c == nil:
		return 0
	case c.DNS != nil:
		return refreshOf(c.DNS.Refresh, DefaultDNSRefresh)
	case c.FileSD != nil:
		return refreshOf(c.FileSD.Refresh, DefaultFileSDRefresh)
	case c.HTTPSD != nil:
		return refreshOf(c.HTTPSD.Refresh, DefaultHTTPSDRefresh)
	}
	return 0
}

// DNSConfig looks up Names: A or AAAA records give addresses that take
// Port; SRV records give their own targets and ports.
type DNSConfig struct {
	Names   []string       `yaml:"names"`
	Type    string         `yaml:"type,omitempty"` // A (default), AAAA or SRV
	Port    int            `yaml:"port,omitempty"` // required for A and AAAA
	Refresh model.Duration `yaml:"refresh,omitempty"`
}

// FileSDConfig reads Prometheus file_sd files: JSON or YAML lists of
// {targets: ["host:port"], labels: {...}}. Files are globs, relative to
// the configuration file's directory; they are re-read when they change
// and every Refresh.
type FileSDConfig struct {
	Files   []string       `yaml:"files"`
	Refresh model.Duration `yaml:"refresh,omitempty"`
}

// HTTPSDConfig fetches a Prometheus http_sd endpoint: a JSON list of
// {targets: [...], labels: {...}} every Refresh.
type HTTPSDConfig struct {
	URL              string                      `yaml:"url"`
	Refresh          model.Duration              `yaml:"refresh,omitempty"`
	HTTPClientConfig promconfig.HTTPClientConfig `yaml:"http_client_config,omitempty"`
}

// Replica is one discovered server: its address and the labels its
// discovery gave it (file_sd and http_sd labels; none for DNS).
type Replica struct {
	Addr   string            // host:port
	Labels map[string]string // nil when the mechanism gives none
}
