package config

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzParse checks that no input makes Parse panic, and that a config it
// accepts prints (String) as YAML that Parse accepts again.
func FuzzParse(f *testing.F) {
	seeds, _ := filepath.Glob("testdata/invalid-*.yml")
	seeds = append(seeds, "../deploy/examples/minimal.yml", "../deploy/examples/full.yml")
	for _, s := range seeds {
		data, err := os.ReadFile(s)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := Parse(data, "testdata/fuzz.yml")
		if err != nil {
			return
		}
		out := cfg.String()
		if _, err := Parse([]byte(out), "testdata/fuzz.yml"); err != nil {
			t.Errorf("String() of an accepted config does not parse: %v\ninput:\n%s\nprinted:\n%s", err, data, out)
		}
	})
}
