package config

import (
	"fmt"
	"net/url"
	"path/filepath"
	"strings"

	"github.com/prometheus/common/model"

	"github.com/vllm-prober/vllm-prober/config/strictyaml"
	"github.com/vllm-prober/vllm-prober/discovery"
	"github.com/vllm-prober/vllm-prober/internal/redact"
)

// fleet checks a target's discovery and the keys that shape its replicas'
// URLs and pairs, which mean nothing without discovery.
func (v *validator) fleet(t *Target, path string) {
	if t.Discovery == nil {
		for _, key := range []string{"scheme", "path_prefix", "max_replicas"} {
			if v.p.Written(path + "." + key) {
				v.p.Fail(path+"."+key, "is used only with discovery: add discovery or remove it")
			}
		}
		return
	}
	if !v.p.Written(path + ".scheme") {
		t.Scheme = DefaultReplicaScheme
	}
	if !v.p.Written(path + ".max_replicas") {
		t.MaxReplicas = DefaultMaxReplicas
	}
	if t.Scheme != "http" && t.Scheme != "https" {
		v.p.Fail(path+".scheme", "must be one of http, https, got %s", strictyaml.Quote(t.Scheme))
	}
	if t.PathPrefix != "" {
		if !strings.HasPrefix(t.PathPrefix, "/") || strings.ContainsAny(t.PathPrefix, "?#") {
			v.p.Fail(path+".path_prefix", "must start with / and hold no query or fragment (or be \"\" for none), got %s", strictyaml.Quote(t.PathPrefix))
		}
		t.PathPrefix = strings.TrimRight(t.PathPrefix, "/")
	}
	v.atLeast(path+".max_replicas", t.MaxReplicas, 1)
	v.discovery(t.Discovery, path+".discovery")
}

// discovery checks a discovery block: exactly one mechanism, and that
// mechanism's keys; an unwritten refresh takes the mechanism's default.
func (v *validator) discovery(d *discovery.Config, path string) {
	var set []string
	for _, m := range []struct {
		name string
		set  bool
	}{{discovery.MechanismDNS, d.DNS != nil}, {discovery.MechanismFileSD, d.FileSD != nil}, {discovery.MechanismHTTPSD, d.HTTPSD != nil}} {
		if m.set {
			set = append(set, m.name)
		}
	}
	if len(set) != 1 {
		got := strings.Join(set, ", ")
		if got == "" {
			got = "none"
		}
		v.p.Fail(path, "must set exactly one of dns, file_sd, http_sd, got %s", got)
		return
	}
	switch {
	case d.DNS != nil:
		v.dns(d.DNS, path+".dns")
	case d.FileSD != nil:
		v.fileSD(d.FileSD, path+".file_sd")
	case d.HTTPSD != nil:
		v.httpSD(d.HTTPSD, path+".http_sd")
	}
}

func (v *validator) dns(c *discovery.DNSConfig, path string) {
	if len(c.Names) == 0 {
		v.p.Fail(path+".names", "must list at least one DNS name, got none")
	}
	for i, n := range c.Names {
		if strings.TrimSpace(n) == "" || strings.ContainsAny(n, " /:") {
			v.p.Fail(fmt.Sprintf("%s.names[%d]", path, i), "must be a DNS name, got %s", strictyaml.Quote(n))
		}
	}
	if c.Type == "" {
		c.Type = discovery.TypeA
	}
	switch c.Type {
	case discovery.TypeA, discovery.TypeAAAA:
		if c.Port < 1 || c.Port > 65535 {
			v.p.Fail(path+".port", "must be a port 1-65535 for type %s records, which carry no port, got %d", c.Type, c.Port)
		}
	case discovery.TypeSRV:
		if c.Port != 0 {
			v.p.Fail(path+".port", "is not used with SRV records, which carry their own ports: remove it, got %d", c.Port)
		}
	default:
		v.p.Fail(path+".type", "must be one of A, AAAA, SRV, got %s", strictyaml.Quote(c.Type))
	}
	v.refresh(path, &c.Refresh, discovery.DefaultDNSRefresh)
}

func (v *validator) fileSD(c *discovery.FileSDConfig, path string) {
	if len(c.Files) == 0 {
		v.p.Fail(path+".files", "must list at least one file or glob, got none")
	}
	for i, f := range c.Files {
		if _, err := filepath.Match(f, ""); err != nil || f == "" {
			v.p.Fail(fmt.Sprintf("%s.files[%d]", path, i), "must be a file name or glob, got %s", strictyaml.Quote(f))
		}
	}
	v.refresh(path, &c.Refresh, discovery.DefaultFileSDRefresh)
}

func (v *validator) httpSD(c *discovery.HTTPSDConfig, path string) {
	u, err := url.Parse(c.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		v.p.Fail(path+".url", "must be an absolute http:// or https:// URL, got %s", strictyaml.Quote(redact.URL(c.URL)))
	} else if u.User != nil {
		v.p.Fail(path+".url", "must not contain credentials (use http_client_config), got %s", strictyaml.Quote(redact.URL(c.URL)))
	}
	v.refresh(path, &c.Refresh, discovery.DefaultHTTPSDRefresh)
}

// refresh checks a mechanism's refresh, or sets its default when unwritten.
func (v *validator) refresh(path string, d *model.Duration, def model.Duration) {
	if !v.p.Written(path + ".refresh") {
		*d = def
		return
	}
	v.positive(path+".refresh", *d)
}
