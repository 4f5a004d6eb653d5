package strictyaml

import (
	"reflect"

	promconfig "github.com/prometheus/common/config"
	"go.yaml.in/yaml/v3"
)

// decodeHTTP decodes an http_client_config. yaml.v3's Node.Decode is not
// strict, so the subtree is first walked field by field into a scratch
// value (unknown keys, types and secret-safe messages with lines), then
// decoded by the library itself so its defaults and checks apply.
func (d *decoder) decodeHTTP(n *yaml.Node, v reflect.Value, path string) {
	if n.Kind != yaml.MappingNode {
		d.p.Add(d.p.LineOf(path), path, "must be a mapping, got %s", d.shown(n, v.Type()))
		return
	}
	before := len(d.p.list)
	scratch := promconfig.DefaultHTTPClientConfig
	scratch.FollowRedirects = d.o.FollowRedirects
	d.decodeMapping(n, reflect.ValueOf(&scratch).Elem(), path)
	if len(d.p.list) > before {
		return
	}
	hc := promconfig.DefaultHTTPClientConfig
	if err := n.Decode(&hc); err != nil {
		d.p.Add(d.p.LineOf(path), path, "%s", d.scrub(err.Error()))
		return
	}
	// The library's default for follow_redirects is not necessarily the
	// caller's (Options.FollowRedirects): the scratch walk started from the
	// caller's and saw the key, merge keys included, if it is there.
	hc.FollowRedirects = scratch.FollowRedirects
	hc.SetDirectory(d.o.Dir)
	if err := hc.Validate(); err != nil {
		d.p.Add(d.p.LineOf(path), path, "%s", d.scrub(err.Error()))
		return
	}
	if d.o.CheckHTTPClient != nil {
		d.o.CheckHTTPClient(&hc, path, d.p)
	}
	v.Set(reflect.ValueOf(hc))
}
