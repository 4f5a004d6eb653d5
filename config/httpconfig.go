package config

import (
	"reflect"

	promconfig "github.com/prometheus/common/config"
	"go.yaml.in/yaml/v3"
)

// decodeHTTP decodes a target's http_client_config. yaml.v3's Node.Decode
// is not strict, so the subtree is first walked field by field into a
// scratch value (unknown keys, types and secret-safe messages with lines),
// then decoded by the library itself so its defaults and checks apply.
func (d *decoder) decodeHTTP(n *yaml.Node, v reflect.Value, path string) {
	if n.Kind != yaml.MappingNode {
		d.p.add(d.p.lineOf(path), path, "must be a mapping, got %s", d.shown(n, v.Type()))
		return
	}
	before := len(d.p.list)
	scratch := defaultHTTPClientConfig()
	d.decodeMapping(n, reflect.ValueOf(&scratch).Elem(), path)
	if len(d.p.list) > before {
		return
	}
	hc := promconfig.DefaultHTTPClientConfig
	if err := n.Decode(&hc); err != nil {
		d.p.add(d.p.lineOf(path), path, "%s", d.scrub(err.Error()))
		return
	}
	// Unlike prometheus/common's default, redirects are opt-in here (see
	// NewHTTPClient): the scratch walk started from false and saw the key,
	// merge keys included, if it is there.
	hc.FollowRedirects = scratch.FollowRedirects
	hc.SetDirectory(d.dir)
	if err := hc.Validate(); err != nil {
		d.p.add(d.p.lineOf(path), path, "%s", d.scrub(err.Error()))
		return
	}
	d.checkCredentialFiles(&hc, path)
	v.Set(reflect.ValueOf(hc))
}
