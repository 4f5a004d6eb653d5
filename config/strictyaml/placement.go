package strictyaml

import (
	"fmt"
	"reflect"
	"slices"

	"go.yaml.in/yaml/v3"
)

// parent is a struct being decoded and the key of its field whose value
// the decoder is in, so that a key written at the wrong depth can be
// placed.
type parent struct {
	t    reflect.Type
	path string
	key  *yaml.Node
}

// misplaced explains the unknown key k, the i-th node of mapping n of a
// struct of type t at path, when the indentation put it at the wrong
// depth: a field of the struct just above it (indented too little) or of
// an enclosing struct (indented too deep). Otherwise it suggests the
// closest field name.
func (d *decoder) misplaced(n *yaml.Node, i int, t reflect.Type, path string, k *yaml.Node) string {
	for j := i - 2; j >= 0; j -= 2 {
		// The nearest key above that is a field, past others that fell
		// out of the same block.
		prev := n.Content[j]
		idx, ok := fieldsOf(t).fields[prev.Value]
		if !ok {
			continue
		}
		if hasField(t.FieldByIndex(idx).Type, k.Value) {
			return fmt.Sprintf(": it is a key of %s (line %d), indent it deeper to put it under %s",
				Quote(prev.Value), prev.Line, Quote(prev.Value))
		}
		break
	}
	for j := len(d.parents) - 1; j >= 0; j-- {
		p := d.parents[j]
		if hasField(p.t, k.Value) {
			return fmt.Sprintf(": it is a key of %s, indent it less to align it with %s (line %d)",
				pathName(p.path), Quote(p.key.Value), p.key.Line)
		}
	}
	si := fieldsOf(t)
	names := make([]string, 0, len(si.fields))
	for name := range si.fields {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		if hasField(t.FieldByIndex(si.fields[name]).Type, k.Value) {
			return fmt.Sprintf(": it is a key of %s, write it under %s", joinPath(path, name), Quote(name))
		}
	}
	return suggest(k.Value, si)
}

// nestedKeys explains a mapping written where a scalar or list belongs
// when its first key is a field of the struct that holds the value: a key
// indented under the key above it instead of beside it.
func (d *decoder) nestedKeys(n *yaml.Node) string {
	if n.Kind != yaml.MappingNode || len(n.Content) == 0 || len(d.parents) == 0 {
		return ""
	}
	p, k := d.parents[len(d.parents)-1], n.Content[0]
	if !hasField(p.t, k.Value) {
		return ""
	}
	return fmt.Sprintf(": %s (line %d) is a key of %s, indent it less to align it with %s",
		Quote(k.Value), k.Line, pathName(p.path), Quote(p.key.Value))
}

// hasField reports whether a mapping decoded into t may have the key.
func hasField(t reflect.Type, key string) bool {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if !walkable(t) {
		return false
	}
	_, ok := fieldsOf(t).fields[key]
	return ok
}

func pathName(path string) string {
	if path == "" {
		return "the top level"
	}
	return path
}
