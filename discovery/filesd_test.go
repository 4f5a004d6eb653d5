package discovery

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"

	"github.com/vllm-prober/vllm-prober/internal/testfile"
)

// writeFile writes name under dir, replacing it by a rename as careful
// tools do, or in place when inPlace.
func writeFile(t *testing.T, dir, name, content string, inPlace bool) {
	t.Helper()
	path := filepath.Join(dir, name)
	if inPlace {
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return
	}
	tmp := testfile.Write(t, dir, "."+name+".tmp", content)
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

func TestFileSDParse(t *testing.T) {
	for _, tc := range []struct {
		name    string
		files   map[string]string // under the base directory
		globs   []string          // none: the one file's name
		want    []Replica
		wantErr string // with the base directory as <dir>
	}{
		{
			name: "JSON and YAML, globs, labels, duplicates merged in path order",
			files: map[string]string{
				"sd/a.json": `[{"targets": ["10.0.0.1:8000", "10.0.0.2:8000"], "labels": {"zone": "a"}},
				               {"targets": ["[fd00::1]:08000"]}]`,
				"sd/b.yml": "- targets: [10.0.0.2:8000, vllm-3.vllm:8000]\n  labels: {zone: b, rack: r1, __scheme__: https}\n",
				"sd/c.txt": "not read",
				"x.yaml":   "- targets: ['10.0.0.9:9000']\n",
			},
			globs: []string{"sd/*.json", "sd/*.yml", "*.yaml", "none/*.json"},
			want: []Replica{
				{Addr: "10.0.0.1:8000", Labels: map[string]string{"zone": "a"}},
				{Addr: "10.0.0.2:8000", Labels: map[string]string{"zone": "a", "rack": "r1"}},
				{Addr: "10.0.0.9:9000"},
				{Addr: "[fd00::1]:8000"},
				{Addr: "vllm-3.vllm:8000", Labels: map[string]string{"zone": "b", "rack": "r1"}},
			},
		},
		{name: "a glob matching nothing is an empty set", globs: []string{"*.json"}, want: []Replica{}},
		{name: "JSON empty list", files: map[string]string{"a.json": " []\n"}, want: []Replica{}},
		{name: "JSON syntax error", files: map[string]string{"a.json": "[\n{\"targets\": [\"h:1\",]}]"},
			wantErr: "file_sd: <dir>/a.json:2: invalid character ']' looking for beginning of value"},
		{name: "JSON wrong type", files: map[string]string{"a.json": "[\n{\"targets\": \"h:1\"}]"},
			wantErr: "file_sd: <dir>/a.json:2: json: cannot unmarshal string into Go struct field targetGroup.targets of type []string"},
		{name: "JSON unknown key", files: map[string]string{"a.json": `[{"target": ["h:1"]}]`},
			wantErr: `file_sd: <dir>/a.json: json: unknown field "target"`},
		{name: "JSON truncated", files: map[string]string{"a.json": `[{"targets": ["h:1"`},
			wantErr: "file_sd: <dir>/a.json: truncated JSON: unexpected EOF"},
		{name: "JSON trailing data", files: map[string]string{"a.json": `[] []`},
			wantErr: "file_sd: <dir>/a.json: data after the list of target groups"},
		{name: "JSON empty file", files: map[string]string{"a.json": " \n"},
			wantErr: "file_sd: <dir>/a.json: empty document (write [] for no targets)"},
		{name: "JSON bad target", files: map[string]string{"a.json": `[{"targets": ["h:1"]}, {"targets": ["h:1", "http://h:8000"]}]`},
			wantErr: `file_sd: <dir>/a.json: group 1: target "http://h:8000": want host:port: too many colons in address`},
		{name: "YAML missing port", files: map[string]string{"a.yml": "- targets:\n  - h:1\n  - vllm-0\n"},
			wantErr: `file_sd: <dir>/a.yml:3: target "vllm-0": want host:port: missing port in address`},
		{name: "YAML bad port", files: map[string]string{"a.yml": "- targets: ['h:0']\n"},
			wantErr: `file_sd: <dir>/a.yml:1: target "h:0": want host:port: port "0" is not a number from 1 to 65535`},
		{name: "YAML path in target", files: map[string]string{"a.yml": "- targets: ['h/v1:80']\n"},
			wantErr: `file_sd: <dir>/a.yml:1: target "h/v1:80": want host:port: "h/v1" is not a host name or address (no scheme or path)`},
		{name: "YAML target not a string", files: map[string]string{"a.yml": "- targets:\n  - {host: h}\n"},
			wantErr: "file_sd: <dir>/a.yml:2: target 0 of group 0: want a host:port string"},
		{name: "YAML bad label name", files: map[string]string{"a.yml": "- targets: ['h:1']\n  labels: {zone-a: x}\n"},
			wantErr: `file_sd: <dir>/a.yml: group 0: label name "zone-a" is not a valid Prometheus label name ([a-zA-Z_][a-zA-Z0-9_]*)`},
		{name: "YAML unknown key", files: map[string]string{"a.yml": "- targets: ['h:1']\n  label: {a: b}\n"},
			wantErr: "file_sd: <dir>/a.yml: yaml: unmarshal errors:\n  line 2: field label not found in type discovery.yamlTargetGroup"},
		{name: "YAML not a list", files: map[string]string{"a.yml": "\ntargets: ['h:1']\n"},
			wantErr: "file_sd: <dir>/a.yml:2: want a list of target groups, not !!map"},
		{name: "YAML syntax error", files: map[string]string{"a.yml": "- targets: ['h:1'\n"},
			wantErr: "file_sd: <dir>/a.yml: yaml: line 1: did not find expected ',' or ']'"},
		{name: "YAML two documents", files: map[string]string{"a.yml": "[]\n---\n[]\n"},
			wantErr: "file_sd: <dir>/a.yml: more than one YAML document"},
		{name: "YAML empty file", files: map[string]string{"a.yaml": "# nothing\n"},
			wantErr: "file_sd: <dir>/a.yaml: empty document (write [] for no targets)"},
		{name: "a directory named like a file", files: map[string]string{"d.json/x": ""}, globs: []string{"*.json"},
			wantErr: "file_sd: open <dir>/d.json: not a regular file (a directory)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, content := range tc.files {
				if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o700); err != nil {
					t.Fatal(err)
				}
				writeFile(t, dir, name, content, true)
			}
			globs := tc.globs
			if globs == nil && len(tc.files) == 1 {
				for name := range tc.files {
					globs = []string{name}
				}
			}
			d, err := New(Config{FileSD: &FileSDConfig{Files: globs}}, Options{BaseDir: dir})
			if err != nil {
				t.Fatal(err)
			}
			e := firstCall(t, d)
			if tc.wantErr != "" {
				want := strings.ReplaceAll(tc.wantErr, "<dir>", dir)
				if e.err == nil || e.err.Error() != want {
					t.Errorf("got %v\nwant fail(%s)", e, want)
				}
				return
			}
			if e.err != nil || !reflect.DeepEqual(e.set, tc.want) {
				t.Errorf("got %v\nwant update(%v)", e, tc.want)
			}
		})
	}
}

// TestFileSDWatch checks that changes to the files are read without
// waiting for the refresh interval (an hour here): a file written, another
// added, one rewritten in place, a broken one (fail, last set kept), one
// removed.
func TestFileSDWatch(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "a.json", `[{"targets": ["10.0.0.1:8000"]}]`, false)
	c := FileSDConfig{Files: []string{"*.json", "*.yml"}, Refresh: model.Duration(time.Hour)}
	d, err := New(Config{FileSD: &c}, Options{BaseDir: dir, Logger: discard})
	if err != nil {
		t.Fatal(err)
	}
	run := start(t, d)
	run.wantUpdate(replicas("10.0.0.1:8000"), false)

	writeFile(t, dir, "b.yml", "- targets: ['10.0.0.2:8000']\n", false)
	run.wantUpdate(replicas("10.0.0.1:8000", "10.0.0.2:8000"), false)

	writeFile(t, dir, "a.json", `[{"targets": ["10.0.0.3:8000"]}]`, true)
	run.wantUpdate(replicas("10.0.0.2:8000", "10.0.0.3:8000"), false)

	writeFile(t, dir, "b.yml", "- targets: ['10.0.0.2:8000'", false)
	run.wantFail("b.yml: yaml: ")
	// Fixed back to what it was: the set did not change, so nothing is
	// reported until the next change.
	writeFile(t, dir, "b.yml", "- targets: ['10.0.0.2:8000']\n", false)
	time.Sleep(3 * settle)
	if err := os.Remove(filepath.Join(dir, "a.json")); err != nil {
		t.Fatal(err)
	}
	run.wantUpdate(replicas("10.0.0.2:8000"), false)

}

// TestFileSDWatchConfigMap checks a file_sd file in a Kubernetes ConfigMap
// volume, which the kubelet updates by swapping the symlink ..data to a new
// directory: the file's own name sees no event.
func TestFileSDWatchConfigMap(t *testing.T) {
	dir := t.TempDir()
	version := func(name, content string) {
		t.Helper()
		if err := os.Mkdir(filepath.Join(dir, name), 0o700); err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(dir, name), "targets.json", content, true)
		if err := os.Symlink(name, filepath.Join(dir, "..data_tmp")); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(filepath.Join(dir, "..data_tmp"), filepath.Join(dir, "..data")); err != nil {
			t.Fatal(err)
		}
	}
	version("..v1", `[{"targets": ["10.0.0.1:8000"]}]`)
	if err := os.Symlink("..data/targets.json", filepath.Join(dir, "targets.json")); err != nil {
		t.Fatal(err)
	}
	c := FileSDConfig{Files: []string{filepath.Join(dir, "*.json")}, Refresh: model.Duration(time.Hour)}
	d, err := New(Config{FileSD: &c}, Options{Logger: discard})
	if err != nil {
		t.Fatal(err)
	}
	run := start(t, d)
	run.wantUpdate(replicas("10.0.0.1:8000"), false)
	version("..v2", `[{"targets": ["10.0.0.1:8000", "10.0.0.2:8000"]}]`)
	run.wantUpdate(replicas("10.0.0.1:8000", "10.0.0.2:8000"), false)
}

// TestFileSDWatchBusyDirectory checks that a change is read even in a
// directory that never stays quiet for the settle time.
func TestFileSDWatchBusyDirectory(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "a.json", `[{"targets": ["10.0.0.1:8000"]}]`, false)
	c := FileSDConfig{Files: []string{"*.json"}, Refresh: model.Duration(time.Hour)}
	d, err := New(Config{FileSD: &c}, Options{BaseDir: dir, Logger: discard})
	if err != nil {
		t.Fatal(err)
	}
	run := start(t, d)
	run.wantUpdate(replicas("10.0.0.1:8000"), false)
	stop := make(chan struct{})
	noisy := make(chan struct{})
	go func() {
		defer close(noisy)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-time.After(settle / 4):
				_ = os.WriteFile(filepath.Join(dir, "noise.log"), []byte(strings.Repeat("x", i)), 0o600)
			}
		}
	}()
	defer func() { close(stop); <-noisy }()
	writeFile(t, dir, "a.json", `[{"targets": ["10.0.0.2:8000"]}]`, false)
	run.wantUpdate(replicas("10.0.0.2:8000"), false)
}
