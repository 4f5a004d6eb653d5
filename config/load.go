package config

import (
	"fmt"
	"path/filepath"
	"reflect"
	"slices"

	promconfig "github.com/prometheus/common/config"
	"go.yaml.in/yaml/v3"

	"github.com/vllm-prober/vllm-prober/config/strictyaml"
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
// against its directory. Every problem is a *strictyaml.Error; several
// are joined with errors.Join, in file order.
func Parse(data []byte, filename string) (*Config, error) {
	p := strictyaml.NewProblems(filename)
	root, err := strictyaml.Parse(data, filename)
	if err != nil {
		return nil, err
	}
	dir, err := filepath.Abs(filepath.Dir(filename))
	if err != nil {
		dir = filepath.Dir(filename)
	}
	cfg := &Config{Global: DefaultGlobal}
	cfg.Global.Histograms = slices.Clone(DefaultGlobal.Histograms)
	if root != nil {
		strictyaml.Decode(root, cfg, p, decodeOptions(dir))
		if err := p.Err(); err != nil {
			return nil, err
		}
	}
	v := &validator{p: p, dir: dir}
	v.config(cfg)
	if err := p.Err(); err != nil {
		return nil, err
	}
	return cfg, nil
}

// decodeOptions tells strictyaml what it cannot know of this schema: list
// elements start from DefaultProbe and DefaultTarget and remember their
// line, redirects are opt-in (see NewHTTPClient), and the files an
// http_client_config names are checked (checkCredentialFiles).
func decodeOptions(dir string) strictyaml.Options {
	return strictyaml.Options{
		Dir:             dir,
		Element:         elementDefaults,
		FollowRedirects: DefaultTarget.HTTPClientConfig.FollowRedirects,
		CheckHTTPClient: func(hc *promconfig.HTTPClientConfig, path string, p *strictyaml.Problems) {
			checkCredentialFiles(hc, path, dir, p)
		},
		Shapes: map[reflect.Type]string{reflect.TypeFor[Regexp](): "a regular expression string"},
	}
}

// elementDefaults returns the defaults a probe or target of the file
// starts from, with its line, and those of a fingerprint block.
func elementDefaults(t reflect.Type, line int) (reflect.Value, bool) {
	switch t {
	case reflect.TypeFor[Probe]():
		p := DefaultProbe
		p.Quality.FinishReasons = append([]string(nil), DefaultProbe.Quality.FinishReasons...)
		p.Line = line
		return reflect.ValueOf(p), true
	case reflect.TypeFor[Target]():
		tg := DefaultTarget
		tg.Line = line
		return reflect.ValueOf(tg), true
	case reflect.TypeFor[Fingerprint]():
		return reflect.ValueOf(DefaultFingerprint), true
	}
	return reflect.Value{}, false
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
