package config

import (
	"errors"
	"fmt"
	"regexp"
	"regexp/syntax"

	"go.yaml.in/yaml/v3"
)

// NewRegexp compiles src into a Regexp. An empty src gives the zero Regexp,
// which is "unset".
func NewRegexp(src string) (Regexp, error) {
	if src == "" {
		return Regexp{}, nil
	}
	re, err := regexp.Compile(src)
	if err != nil {
		return Regexp{}, regexpError(err)
	}
	return Regexp{Regexp: re, Source: src}, nil
}

// anchored returns src compiled as ^(?:src)$, keeping src as Source.
func anchored(src string) (Regexp, error) {
	re, err := regexp.Compile("^(?:" + src + ")$")
	if err != nil {
		return Regexp{}, regexpError(err)
	}
	return Regexp{Regexp: re, Source: src}, nil
}

// regexpError shortens a regexp compile error to its cause, without
// repeating the expression (the caller prints the value).
func regexpError(err error) error {
	var se *syntax.Error
	if errors.As(err, &se) {
		return fmt.Errorf("invalid regular expression: %s", se.Code)
	}
	return fmt.Errorf("invalid regular expression: %w", err)
}

// IsZero reports whether the Regexp is unset.
func (r Regexp) IsZero() bool { return r.Regexp == nil }

// UnmarshalYAML compiles a YAML string into the Regexp.
func (r *Regexp) UnmarshalYAML(n *yaml.Node) error {
	var src string
	if err := n.Decode(&src); err != nil {
		return err
	}
	re, err := NewRegexp(src)
	if err != nil {
		return err
	}
	*r = re
	return nil
}

// MarshalYAML writes the Regexp back as its source text.
func (r Regexp) MarshalYAML() (any, error) { return r.String(), nil }

// MarshalText writes the Regexp as its source text (used by encoding/json).
func (r Regexp) MarshalText() ([]byte, error) { return []byte(r.String()), nil }

// UnmarshalText compiles text into the Regexp (used by encoding/json).
func (r *Regexp) UnmarshalText(text []byte) error {
	re, err := NewRegexp(string(text))
	if err != nil {
		return err
	}
	*r = re
	return nil
}

// String returns the source text (the compiled expression when a Regexp
// was built without one); it is "" for the zero Regexp.
func (r Regexp) String() string {
	if r.Source == "" && r.Regexp != nil {
		return r.Regexp.String()
	}
	return r.Source
}
