package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"

	"gopkg.in/yaml.v3"
)

// Load reads and parses the configuration file at path.
func Load(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read config file: %w", err)
	}
	return Parse(data, path)
}

// Parse decodes data strictly, applies defaults and validates the result.
// filename names the file in errors, and relative workload.file,
// quality.json_schema and http_client_config file paths are resolved
// against its directory. Every problem is an *Error; several are joined
// with errors.Join, in file order.
func Parse(data []byte, filename string) (*Config, error) {
	p := newProblems(filename)
	root, err := parseYAML(data, filename)
	if err != nil {
		return nil, err
	}
	dir, err := filepath.Abs(filepath.Dir(filename))
	if err != nil {
		dir = filepath.Dir(filename)
	}
	cfg := &Config{Global: DefaultGlobal}
	if root != nil {
		if root.Kind != yaml.MappingNode {
			p.add(root.Line, "", "the file must be a mapping, got %s", kindName(root))
			return nil, p.err()
		}
		d := &decoder{p: p, dir: dir}
		d.decode(root, reflect.ValueOf(cfg).Elem(), "")
		if err := p.err(); err != nil {
			return nil, err
		}
	}
	v := &validator{p: p, dir: dir}
	v.config(cfg)
	if err := p.err(); err != nil {
		return nil, err
	}
	return cfg, nil
}

var yamlLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// parseYAML parses the single document of data into a node tree; a nil
// node means an empty file.
func parseYAML(data []byte, filename string) (*yaml.Node, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, nil
		}
		return nil, syntaxError(filename, err)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		if err != nil {
			return nil, syntaxError(filename, err)
		}
		return nil, &Error{File: filename, Line: extra.Line, Msg: "only one YAML document is allowed"}
	}
	if len(doc.Content) == 0 {
		return nil, nil
	}
	return doc.Content[0], nil
}

func syntaxError(filename string, err error) error {
	if m := yamlLine.FindStringSubmatch(err.Error()); m != nil {
		line, _ := strconv.Atoi(m[1])
		return &Error{File: filename, Line: line, Msg: "invalid YAML: " + m[2]}
	}
	return &Error{File: filename, Msg: "invalid YAML: " + trimYAMLPrefix(err.Error())}
}

func trimYAMLPrefix(s string) string {
	if len(s) > 6 && s[:6] == "yaml: " {
		return s[6:]
	}
	return s
}

// Probe returns the probe called name.
func (c *Config) Probe(name string) (Probe, bool) {
	for _, p := range c.Probes {
		if p.Name == name {
			return p, true
		}
	}
	return Probe{}, false
}

// Target returns the target called name.
func (c *Config) Target(name string) (Target, bool) {
	for _, t := range c.Targets {
		if t.Name == name {
			return t, true
		}
	}
	return Target{}, false
}

// ProbesFor returns the probes target t runs: those it names, in its
// order, or every probe in file order when it names none.
func (c *Config) ProbesFor(t Target) []Probe {
	if len(t.Probes) == 0 {
		return slices.Clone(c.Probes)
	}
	out := make([]Probe, 0, len(t.Probes))
	for _, name := range t.Probes {
		if p, ok := c.Probe(name); ok {
			out = append(out, p)
		}
	}
	return out
}

// String returns the configuration as YAML with secrets shown as <secret>
// and URL passwords redacted, safe to print or log.
func (c *Config) String() string {
	b, err := yaml.Marshal(c)
	if err != nil {
		return fmt.Sprintf("# config cannot be shown: %v\n", err)
	}
	return string(b)
}
