package testfile

import (
	"os"
	"path/filepath"
	"testing"
)

func TestWriteAndTemp(t *testing.T) {
	dir := t.TempDir()
	if got, want := Write(t, dir, "a.yml", "x: 1\n"), filepath.Join(dir, "a.yml"); got != want {
		t.Errorf("Write path %q, want %q", got, want)
	}
	for _, path := range []string{filepath.Join(dir, "a.yml"), Temp(t, "b.json", "x: 1\n")} {
		b, err := os.ReadFile(path)
		if err != nil || string(b) != "x: 1\n" {
			t.Errorf("%s holds %q (%v), want %q", path, b, err, "x: 1\n")
		}
		if fi, err := os.Stat(path); err != nil {
			t.Error(err)
		} else if fi.Mode().Perm() != 0o600 {
			t.Errorf("%s mode %v, want 0600", path, fi.Mode().Perm())
		}
	}
}
