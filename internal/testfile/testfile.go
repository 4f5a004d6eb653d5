// Package testfile writes the files tests hand to the code under test:
// configs, datasets, schemas, tokens. One place, so every test writes them
// the same way and ends at once when it cannot.
package testfile

import (
	"os"
	"path/filepath"
	"testing"
)

// Write writes content to dir/name with mode 0o600 and returns the path.
// It ends the test if the file cannot be written.
func Write(t testing.TB, dir, name, content string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatalf("write test file: %v", err)
	}
	return path
}

// Temp writes content to name in a fresh t.TempDir() and returns the path.
func Temp(t testing.TB, name, content string) string {
	t.Helper()
	return Write(t, t.TempDir(), name, content)
}
