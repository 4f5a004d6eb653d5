package config

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"hash"
	"hash/fnv"
	"math"
	"reflect"
	"slices"
	"strings"
)

// fingerprintMaxDepth bounds the walk over a config value.
const fingerprintMaxDepth = 32

// fingerprint returns a canonical digest of everything that configures one
// (target, probe) pair, so a reload can tell unchanged pairs from changed
// ones. It walks every field, secrets included (a changed token must
// restart the pair; the digest never leaves the process), and skips fields
// that are not configuration: those tagged yaml:"-" (source line numbers)
// and functions. A discovered replica's labels, when it has any, are part
// of its pair's configuration too (they go on its target_info series).
func fingerprint(t Target, p Probe, labels ...map[string]string) string {
	w := fingerprinter{h: sha256.New()}
	w.value(reflect.ValueOf(t), 0)
	w.value(reflect.ValueOf(p), 0)
	for _, l := range labels {
		if l != nil {
			w.value(reflect.ValueOf(l), 0)
		}
	}
	return hex.EncodeToString(w.h.Sum(nil))
}

type fingerprinter struct {
	h hash.Hash
}

// str writes s length-prefixed, so adjacent values cannot run together.
func (w *fingerprinter) str(s string) {
	w.h.Write(binary.AppendUvarint(nil, uint64(len(s))))
	w.h.Write([]byte(s))
}

func (w *fingerprinter) u64(kind byte, x uint64) {
	w.h.Write(binary.LittleEndian.AppendUint64([]byte{kind}, x))
}

func (w *fingerprinter) value(v reflect.Value, depth int) {
	if depth > fingerprintMaxDepth {
		return
	}
	if v.Type() == reflect.TypeFor[Regexp]() {
		w.str(v.FieldByName("Source").String())
		return
	}
	switch v.Kind() {
	case reflect.Bool:
		var b uint64
		if v.Bool() {
			b = 1
		}
		w.u64('b', b)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		w.u64('i', uint64(v.Int()))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		w.u64('u', v.Uint())
	case reflect.Float32, reflect.Float64:
		w.u64('f', math.Float64bits(v.Float()))
	case reflect.String:
		w.str(v.String())
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			w.str("nil")
			return
		}
		w.str(v.Elem().Type().String())
		w.value(v.Elem(), depth+1)
	case reflect.Slice, reflect.Array:
		w.u64('l', uint64(v.Len()))
		for i := range v.Len() {
			w.value(v.Index(i), depth+1)
		}
	case reflect.Map:
		w.mapValue(v, depth)
	case reflect.Struct:
		for i := range v.NumField() {
			f := v.Type().Field(i)
			if f.Tag.Get("yaml") == "-" {
				continue
			}
			w.str(f.Name)
			w.value(v.Field(i), depth+1)
		}
	default:
		// Functions, channels and unsafe pointers hold no configuration.
	}
}

// mapValue writes map entries in a canonical order: sorted by the digest
// of their keys.
func (w *fingerprinter) mapValue(v reflect.Value, depth int) {
	type entry struct {
		key string
		val reflect.Value
	}
	entries := make([]entry, 0, v.Len())
	for it := v.MapRange(); it.Next(); {
		kw := fingerprinter{h: fnv.New128a()}
		kw.value(it.Key(), depth+1)
		entries = append(entries, entry{string(kw.h.Sum(nil)), it.Value()})
	}
	slices.SortFunc(entries, func(a, b entry) int { return strings.Compare(a.key, b.key) })
	w.u64('m', uint64(len(entries)))
	for _, e := range entries {
		w.str(e.key)
		w.value(e.val, depth+1)
	}
}
