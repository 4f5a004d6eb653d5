package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/vllm-prober/vllm-prober/internal/fileread"
	"github.com/vllm-prober/vllm-prober/internal/testfile"
)

// filesConfig is a valid config naming a dataset, a JSON schema and a
// credential file; its parts are replaced by hostile files below.
func filesConfig(dataset, schema, cred string) string {
	return fmt.Sprintf(`targets:
  - name: t
    url: http://127.0.0.1:1
    http_client_config:
      authorization: {type: Bearer, credentials_file: %q}
probes:
  - name: p
    api: chat
    rate: 1
    workload: {file: %q}
    quality: {json_schema: %q}
`, cred, dataset, schema)
}

// hostile makes path a symlink to /dev/zero, a FIFO or a file past limit.
func hostile(t *testing.T, kind, path string, limit int64) {
	t.Helper()
	var err error
	switch kind {
	case "zero":
		err = os.Symlink("/dev/zero", path)
	case "fifo":
		err = syscall.Mkfifo(path, 0o600)
	case "big":
		var f *os.File
		if f, err = os.Create(path); err == nil {
			err = errors.Join(f.Truncate(limit+1), f.Close())
		}
	}
	if err != nil {
		t.Fatal(err)
	}
}

func TestFilesNamedByTheConfigAreBounded(t *testing.T) {
	for _, tc := range []struct {
		name, file, kind string
		limit            int64
		want             string
	}{
		{"config symlink to /dev/zero", "c.yml", "zero", 0, "read config file: open DIR/c.yml: not a regular file (a character device)"},
		{"config FIFO", "c.yml", "fifo", 0, "read config file: open DIR/c.yml: not a regular file (a FIFO)"},
		{"config too large", "c.yml", "big", fileread.ConfigLimit, "read config file: read DIR/c.yml: file too large: over the 4 MiB cap"},
		{"dataset symlink to /dev/zero", "d.jsonl", "zero", 0, `probes[0].workload.file: must be a regular file, got "d.jsonl"`},
		{"dataset too large", "d.jsonl", "big", fileread.DatasetLimit, `probes[0].workload.file: must be at most 256 MiB, got "d.jsonl"`},
		{"schema FIFO", "s.json", "fifo", 0, `probes[0].quality.json_schema: must be a regular file, got "s.json"`},
		{"schema too large", "s.json", "big", fileread.SchemaLimit, `probes[0].quality.json_schema: must be at most 4 MiB, got "s.json"`},
		{"credential symlink to /dev/zero", "cred", "zero", 0, `targets[0].http_client_config.authorization.credentials_file: must be a regular file, got "cred"`},
		{"credential too large", "cred", "big", fileread.CredentialLimit, `targets[0].http_client_config.authorization.credentials_file: must be at most 1 MiB, got "cred"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			files := map[string]string{
				"d.jsonl": `{"prompt": "hi"}` + "\n",
				"s.json":  `{"type": "object"}`,
				"cred":    "token",
			}
			files["c.yml"] = filesConfig("d.jsonl", "s.json", "cred")
			for name, content := range files {
				if name == tc.file {
					hostile(t, tc.kind, filepath.Join(dir, name), tc.limit)
				} else if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			cfgPath := filepath.Join(dir, "c.yml")
			_, err := Load(cfgPath)
			want := strings.ReplaceAll(tc.want, "DIR", dir)
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Fatalf("Load error:\n%v\nwant it to contain:\n%s", err, want)
			}
			var s SafeConfig
			if _, err := s.Reload(cfgPath); err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("Reload error:\n%v\nwant it to contain:\n%s", err, want)
			}
		})
	}
}

// TestSchemaReferencesAreBounded covers a schema that refers to another
// file: the referenced file is read through the same cap.
func TestSchemaReferencesAreBounded(t *testing.T) {
	dir := t.TempDir()
	main := testfile.Write(t, dir, "main.json", `{"$ref": "other.json"}`)
	hostile(t, "zero", filepath.Join(dir, "other.json"), 0)
	_, err := NewSchemaCompiler().Compile(main)
	if err == nil || !strings.Contains(err.Error(), "other.json: not a regular file (a character device)") {
		t.Fatalf("Compile error %v, want other.json refused", err)
	}
}
