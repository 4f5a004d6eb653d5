package config

import (
	"fmt"
	"path/filepath"
	"reflect"
	"slices"

	"go.yaml.in/yaml/v3"

	"github.com/vllm-prober/vllm-prober/internal/fileread"
	"github.com/vllm-prober/vllm-prober/internal/redact"
)

// Load reads and parses the configuration file at path.
func Load(path string) (*Config, error) {
	data, err := fileread.ReadWithin(path, fileread.ConfigLimit, ConfigReadTimeout)
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
// and the user info and query values of URLs redacted, safe to print or
// log.
func (c *Config) String() string {
	b, err := yaml.Marshal(c)
	if err != nil {
		return fmt.Sprintf("# config cannot be shown: %v\n", err)
	}
	return redact.Text(string(b))
}
