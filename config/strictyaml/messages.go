package strictyaml

import (
	"reflect"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/vllm-prober/vllm-prober/internal/redact"
)

// describe names the YAML shape expected for values of t.
func (d *decoder) describe(t reflect.Type) string {
	if shape, ok := d.o.Shapes[t]; ok {
		return shape
	}
	switch t {
	case durationType:
		return "a duration such as 30s or 1m30s"
	case urlType:
		return "a URL string"
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "a list"
	case reflect.Struct, reflect.Map:
		return "a mapping"
	case reflect.Pointer:
		return d.describe(t.Elem())
	}
	return "a " + t.String()
}

// shown formats the value of n for a message; secrets are never shown.
func (d *decoder) shown(n *yaml.Node, t reflect.Type) string {
	if n.Kind != yaml.ScalarNode {
		return kindName(n)
	}
	switch {
	case holdsSecret(t, nil):
		return "<secret>"
	case t == urlType:
		return Quote(redact.URL(n.Value))
	}
	return Quote(d.scrub(n.Value))
}

// holdsSecret reports whether a value of type t is or contains a Secret, so
// that a scalar written where such a value belongs (for example
// "authorization: Bearer xyz") is never echoed.
func holdsSecret(t reflect.Type, seen map[reflect.Type]bool) bool {
	if t == secretType {
		return true
	}
	if seen[t] || t.Name() != "" && !strings.HasPrefix(t.PkgPath(), httpConfigType.PkgPath()) {
		return false // only prometheus/common/config's types hold a Secret
	}
	if seen == nil {
		seen = map[reflect.Type]bool{}
	}
	seen[t] = true
	switch t.Kind() {
	case reflect.Pointer, reflect.Slice, reflect.Array, reflect.Map:
		return holdsSecret(t.Elem(), seen)
	case reflect.Struct:
		for i := range t.NumField() {
			if holdsSecret(t.Field(i).Type, seen) {
				return true
			}
		}
	}
	return false
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.AliasNode:
		return "an alias"
	}
	return "a scalar"
}

// scrub replaces every secret value seen so far with <secret>.
func (d *decoder) scrub(s string) string {
	for _, sec := range d.secrets {
		s = strings.ReplaceAll(s, sec, "<secret>")
	}
	return s
}

// suggest names the known field closest to an unknown key, when it is
// close enough to be a typo.
func suggest(key string, si *structInfo) string {
	best, bestDist := "", 3
	for name := range si.fields {
		if dist := editDistance(key, name); dist < bestDist || dist == bestDist && name < best {
			best, bestDist = name, dist
		}
	}
	if best == "" {
		return ""
	}
	return " (did you mean " + Quote(best) + "?)"
}

// editDistance is the Levenshtein distance between a and b, in bytes.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
