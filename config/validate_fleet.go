package config

import (
	"errors"
	"strings"

	"github.com/vllm-prober/vllm-prober/config/strictyaml"
	"github.com/vllm-prober/vllm-prober/discovery"
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
	}
	v.atLeast(path+".max_replicas", t.MaxReplicas, 1)
	v.discovery(t.Discovery, path+".discovery")
}

// discovery checks a discovery block as package discovery builds it (one
// mechanism and its keys), placing the problem at its key's line, and
// that a written refresh is positive (unwritten, the mechanism's default).
func (v *validator) discovery(d *discovery.Config, path string) {
	var ce *discovery.ConfigError
	switch _, err := discovery.New(*d, discovery.Options{BaseDir: v.dir}); {
	case errors.As(err, &ce) && ce.Key != "":
		v.p.Fail(path+"."+ce.Key, "%v", ce.Err)
	case errors.As(err, &ce):
		v.p.Fail(path, "%v", ce.Err)
	case err != nil:
		v.p.Fail(path, "%v", err)
	}
	for _, m := range []string{discovery.MechanismDNS, discovery.MechanismFileSD, discovery.MechanismHTTPSD} {
		key := path + "." + m + ".refresh"
		if !v.p.Written(key) {
			continue
		}
		switch m {
		case discovery.MechanismDNS:
			v.positive(key, d.DNS.Refresh)
		case discovery.MechanismFileSD:
			v.positive(key, d.FileSD.Refresh)
		default:
			v.positive(key, d.HTTPSD.Refresh)
		}
	}
}
