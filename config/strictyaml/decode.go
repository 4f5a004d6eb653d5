// Package strictyaml reads a YAML file into Go values strictly: unknown
// and duplicate keys, type mismatches and inline secrets are problems, and
// every problem is an *Error that names the file, line, field path and
// value. Syntax errors are placed at the offending line, and keys written
// at the wrong depth are explained with the indentation that fixes them.
// It knows YAML, reflection and prometheus/common's HTTPClientConfig, not
// the vllm-prober schema, which package config gives it through Options.
package strictyaml

import (
	"errors"
	"fmt"
	"math"
	"net/url"
	"reflect"
	"strings"
	"sync"

	promconfig "github.com/prometheus/common/config"
	"github.com/prometheus/common/model"
	"go.yaml.in/yaml/v3"
)

// maxNodes bounds the nodes one decode visits, so aliases that expand
// exponentially cannot exhaust memory or time.
const maxNodes = 100_000

var (
	httpConfigType = reflect.TypeFor[promconfig.HTTPClientConfig]()
	durationType   = reflect.TypeFor[model.Duration]()
	secretType     = reflect.TypeFor[promconfig.Secret]()
	urlType        = reflect.TypeFor[promconfig.URL]()
	v3Unmarshaler  = reflect.TypeFor[yaml.Unmarshaler]()
	v2Unmarshaler  = reflect.TypeFor[interface {
		UnmarshalYAML(func(any) error) error
	}]()
)

// Options gives the decoder what it knows only of the schema it decodes.
type Options struct {
	// Dir is the directory of the file, against which relative file paths
	// in an http_client_config are resolved.
	Dir string
	// Element returns the value a new list element, or the value a nil
	// pointer comes to point to, of type t starts from (its defaults),
	// given the line of the element; ok is false for types that start
	// from their zero value.
	Element func(t reflect.Type, line int) (v reflect.Value, ok bool)
	// FollowRedirects is the value of follow_redirects in an
	// http_client_config that leaves it out.
	FollowRedirects bool
	// CheckHTTPClient, when set, checks an http_client_config that decoded
	// and validated cleanly, at path, before it is stored.
	CheckHTTPClient func(hc *promconfig.HTTPClientConfig, path string, p *Problems)
	// Shapes names the YAML shape of types with their own unmarshaler,
	// such as "a regular expression string", for messages.
	Shapes map[reflect.Type]string
}

// Decode sets the struct that v points to from root, the top-level mapping
// of a file, recording every problem in p. Fields absent from the file
// keep the value already in place (the defaults).
func Decode(root *yaml.Node, v any, p *Problems, o Options) {
	if root.Kind != yaml.MappingNode {
		p.Add(root.Line, "", "the file must be a mapping, got %s", kindName(root))
		return
	}
	d := &decoder{p: p, o: o}
	d.decode(root, reflect.ValueOf(v).Elem(), "")
}

// decoder walks a yaml.Node tree into a Go value strictly: unknown and
// duplicate keys and type mismatches are problems with file, line and
// field path. Fields absent from the file keep the value already in place
// (the defaults); so does an explicit null.
type decoder struct {
	p       *Problems
	o       Options
	secrets []string // secret values seen, scrubbed from messages
	nodes   int
	// merging holds the mappings whose merge keys are being applied, so a
	// mapping that merges itself (&a {<<: *a}) is an error, not endless
	// recursion.
	merging map[*yaml.Node]bool
	parents []parent // enclosing structs, outermost first
}

// decode sets v from n; path names v in messages.
func (d *decoder) decode(n *yaml.Node, v reflect.Value, path string) {
	n = resolve(n)
	d.nodes++
	if d.nodes == maxNodes {
		d.p.Add(n.Line, path, "document too large or too many aliases")
	}
	if d.nodes >= maxNodes || isNull(n) {
		return
	}
	t := v.Type()
	switch {
	case t == httpConfigType:
		d.decodeHTTP(n, v, path)
	case n.Kind == yaml.MappingNode && walkable(t):
		d.decodeMapping(n, v, path)
	case t.Kind() == reflect.Pointer:
		if v.IsNil() {
			v.Set(reflect.New(t.Elem()))
			if d.o.Element != nil {
				if def, ok := d.o.Element(t.Elem(), n.Line); ok {
					v.Elem().Set(def)
				}
			}
		}
		d.decode(n, v.Elem(), path)
	case isLeaf(t):
		d.decodeLeaf(n, v, path)
	case t.Kind() == reflect.Slice && n.Kind == yaml.SequenceNode:
		d.decodeSequence(n, v, path)
	case t.Kind() == reflect.Map && n.Kind == yaml.MappingNode:
		d.decodeMapping(n, v, path)
	default:
		d.p.Add(n.Line, path, "must be %s, got %s%s", d.describe(t), d.shown(n, t), d.nestedKeys(n))
	}
}

// isLeaf reports whether values of t are decoded by yaml itself: scalars,
// free-form values and types with their own unmarshaler (other than
// structs that only add defaults, which the decoder walks).
func isLeaf(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.String, reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32,
		reflect.Int64, reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64, reflect.Interface:
		return true
	}
	return hasUnmarshaler(t)
}

func hasUnmarshaler(t reflect.Type) bool {
	pt := reflect.PointerTo(t)
	return pt.Implements(v3Unmarshaler) || pt.Implements(v2Unmarshaler)
}

// walkable reports whether the decoder walks a mapping into t field by
// field: plain structs, and the prometheus/common/config structs whose
// unmarshalers only add defaults and checks (the library decodes those
// again afterwards).
func walkable(t reflect.Type) bool {
	if t.Kind() != reflect.Struct {
		return false
	}
	return !hasUnmarshaler(t) || t.PkgPath() == httpConfigType.PkgPath() && t != urlType
}

func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" || n.Kind == 0
}

// decodeLeaf lets yaml decode one value and turns its error into a
// problem that names the field and (unless secret) the value.
func (d *decoder) decodeLeaf(n *yaml.Node, v reflect.Value, path string) {
	t := v.Type()
	if t == secretType && n.Kind == yaml.ScalarNode && n.Value != "" {
		d.secrets = append(d.secrets, n.Value)
		// Secrets come only from files (docs/design.md, "Configuration"),
		// so a config can be shown, diffed and stored without them.
		d.p.Add(n.Line, path, "inline secrets are not allowed: put the value in a file and name it with %s", fileKeyFor(path))
		return
	}
	if (t.Kind() == reflect.Float64 || t.Kind() == reflect.Float32) && n.Kind == yaml.ScalarNode {
		switch strings.ToLower(strings.TrimPrefix(n.Value, "+")) {
		case "inf", ".inf", "infinity":
			v.SetFloat(math.Inf(1))
			return
		}
	}
	ptr := reflect.New(t)
	ptr.Elem().Set(v)
	err := n.Decode(ptr.Interface())
	if err == nil {
		v.Set(ptr.Elem())
		return
	}
	var te *yaml.TypeError
	var ue *url.Error
	if t == durationType && n.Kind == yaml.ScalarNode {
		if whole, ok := wholeDuration(n.Value); ok {
			d.p.Add(n.Line, path, "must be %s, without fractions: write %s, got %s", d.describe(t), whole, Quote(n.Value))
			return
		}
	}
	switch {
	case errors.As(err, &te) || t == durationType:
		d.p.Add(n.Line, path, "must be %s, got %s%s", d.describe(t), d.shown(n, t), d.nestedKeys(n))
	case errors.As(err, &ue):
		// url.Error repeats the whole URL, password included.
		d.p.Add(n.Line, path, "invalid URL: %s, got %s", d.scrub(ue.Err.Error()), d.shown(n, t))
	default:
		d.p.Add(n.Line, path, "%s, got %s", d.scrub(err.Error()), d.shown(n, t))
	}
}

// decodeSequence decodes a list into a fresh slice; elements start from
// the defaults Options.Element gives them.
func (d *decoder) decodeSequence(n *yaml.Node, v reflect.Value, path string) {
	t := v.Type()
	s := reflect.MakeSlice(t, len(n.Content), len(n.Content))
	for i, c := range n.Content {
		ep := fmt.Sprintf("%s[%d]", path, i)
		d.p.lines[ep] = c.Line
		e := s.Index(i)
		if d.o.Element != nil {
			if def, ok := d.o.Element(t.Elem(), c.Line); ok {
				e.Set(def)
			}
		}
		d.decode(c, e, ep)
	}
	v.Set(s)
}

// decodeMapping decodes a mapping into a struct (by yaml tags, including
// inline fields) or a map, rejecting unknown and duplicate keys.
func (d *decoder) decodeMapping(n *yaml.Node, v reflect.Value, path string) {
	if v.Kind() == reflect.Map && v.IsNil() {
		v.Set(reflect.MakeMap(v.Type()))
	}
	d.merge(n, v, path)
	seen := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		if isMergeKey(k) {
			continue
		}
		if k.Kind != yaml.ScalarNode {
			d.p.Add(k.Line, path, "keys must be strings, got %s", kindName(k))
			continue
		}
		kp := joinPath(path, k.Value)
		if first, dup := seen[k.Value]; dup {
			d.p.Add(k.Line, kp, "duplicate key, first defined at line %d", first)
			continue
		}
		seen[k.Value] = k.Line
		d.p.lines[kp] = k.Line
		if v.Kind() == reflect.Map {
			d.decodeMapEntry(k, val, v, kp)
			continue
		}
		f, inline, ok := fieldByName(v, k.Value)
		switch {
		case !ok:
			d.p.Add(k.Line, path, "unknown field %s%s", Quote(k.Value), d.misplaced(n, i, v.Type(), path, k))
		case inline.IsValid():
			d.decodeMapEntry(k, val, inline, kp)
		default:
			d.parents = append(d.parents, parent{t: v.Type(), path: path, key: k})
			d.decode(val, f, kp)
			d.parents = d.parents[:len(d.parents)-1]
		}
	}
}

// merge applies YAML merge keys (<<: *base) before the mapping's own keys,
// which therefore override merged ones; in a list of merged mappings the
// first one wins.
func (d *decoder) merge(n *yaml.Node, v reflect.Value, path string) {
	for i := 0; i+1 < len(n.Content); i += 2 {
		if !isMergeKey(n.Content[i]) {
			continue
		}
		val := resolve(n.Content[i+1])
		srcs := []*yaml.Node{val}
		if val.Kind == yaml.SequenceNode {
			srcs = val.Content
		}
		for j := len(srcs) - 1; j >= 0; j-- {
			src := resolve(srcs[j])
			if d.nodes >= maxNodes {
				return
			}
			if src.Kind != yaml.MappingNode {
				d.p.Add(src.Line, path, "merge key << needs a mapping, got %s", kindName(src))
				continue
			}
			if d.merging[src] {
				d.p.Add(n.Content[i].Line, path, "merge key << refers to a mapping that contains it")
				continue
			}
			if d.merging == nil {
				d.merging = map[*yaml.Node]bool{}
			}
			d.merging[n] = true
			d.nodes++
			d.decodeMapping(src, v, path)
			delete(d.merging, n)
		}
	}
}

func isMergeKey(k *yaml.Node) bool {
	return k.Kind == yaml.ScalarNode && k.ShortTag() == "!!merge"
}

// resolve follows aliases to the node they name.
func resolve(n *yaml.Node) *yaml.Node {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	return n
}

func (d *decoder) decodeMapEntry(k, val *yaml.Node, m reflect.Value, path string) {
	key := reflect.New(m.Type().Key()).Elem()
	if key.Kind() != reflect.String {
		d.p.Add(k.Line, path, "unsupported key type")
		return
	}
	key.SetString(k.Value)
	e := reflect.New(m.Type().Elem()).Elem()
	if old := m.MapIndex(key); old.IsValid() {
		e.Set(old)
	}
	d.decode(val, e, path)
	m.SetMapIndex(key, e)
}

func joinPath(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// fieldByName finds the field of struct v with yaml name key, looking into
// inline structs; failing that it returns the inline map that takes any key.
func fieldByName(v reflect.Value, key string) (field, inlineMap reflect.Value, ok bool) {
	info := fieldsOf(v.Type())
	if idx, ok := info.fields[key]; ok {
		return v.FieldByIndex(idx), reflect.Value{}, true
	}
	if info.inlineMap == nil {
		return reflect.Value{}, reflect.Value{}, false
	}
	m := v.FieldByIndex(info.inlineMap)
	if m.IsNil() {
		m.Set(reflect.MakeMap(m.Type()))
	}
	return reflect.Value{}, m, true
}

// structInfo maps the yaml names of a struct's fields to field indexes.
type structInfo struct {
	fields    map[string][]int
	inlineMap []int
}

var structInfos sync.Map // reflect.Type → *structInfo

func fieldsOf(t reflect.Type) *structInfo {
	if si, ok := structInfos.Load(t); ok {
		return si.(*structInfo)
	}
	si := &structInfo{fields: map[string][]int{}}
	collectFields(t, nil, si)
	structInfos.Store(t, si)
	return si
}

func collectFields(t reflect.Type, prefix []int, si *structInfo) {
	for i := range t.NumField() {
		f := t.Field(i)
		idx := append(append([]int(nil), prefix...), i)
		tag := f.Tag.Get("yaml")
		name, opts, _ := strings.Cut(tag, ",")
		if tag == "-" || !f.IsExported() && !f.Anonymous {
			continue
		}
		if strings.Contains(opts, "inline") {
			switch f.Type.Kind() {
			case reflect.Struct:
				collectFields(f.Type, idx, si)
			case reflect.Map:
				si.inlineMap = idx
			}
			continue
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		si.fields[name] = idx
	}
}

// fileKeyFor names the key that reads a secret field's value from a file.
func fileKeyFor(path string) string {
	key := path[strings.LastIndex(path, ".")+1:]
	if i := strings.IndexByte(key, '['); i >= 0 {
		return "a *_file key"
	}
	return key + "_file"
}
