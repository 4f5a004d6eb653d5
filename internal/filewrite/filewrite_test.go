package filewrite

import (
	"os"
	"path/filepath"
	"testing"
)

// TestWhole: a write replaces the file whole with mode 0o644 and leaves no
// temporary file; a write that cannot happen (the directory is missing)
// leaves nothing behind.
func TestWhole(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out.yml")
	if err := os.WriteFile(path, []byte("previous\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := Whole(path, []byte("new\n")); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil || string(b) != "new\n" {
		t.Fatalf("content %q, %v; want %q", b, err, "new\n")
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o644 {
		t.Fatalf("mode %v, %v; want 0644", fi.Mode().Perm(), err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Fatalf("%d entries in the directory, want only the file", len(ents))
	}
	if err := Whole(filepath.Join(dir, "missing", "out.yml"), []byte("x")); err == nil {
		t.Fatal("write into a missing directory succeeded")
	}
}
