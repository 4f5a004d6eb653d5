// Package testfile writes the files tests hand to the code under test:
// configs, datasets, schemas, tokens, and compares what they print with
// golden files. One place, so every test writes and compares them the same
// way and ends at once when it cannot.
package testfile

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
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

// CompareGolden compares got with the golden file at path line by line and
// reports every line that differs, by its number, with both sides quoted; a
// line one side lacks shows as <missing>. It ends the test if the golden
// file cannot be read.
func CompareGolden(t testing.TB, path, got string) {
	t.Helper()
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read golden file: %v", err)
	}
	gotLines, wantLines := strings.Split(got, "\n"), strings.Split(string(want), "\n")
	for i := range max(len(gotLines), len(wantLines)) {
		if g, w := lineAt(gotLines, i), lineAt(wantLines, i); g != w {
			t.Errorf("%s, line %d:\n got %s\nwant %s", path, i+1, g, w)
		}
	}
}

func lineAt(lines []string, i int) string {
	if i < len(lines) {
		return strconv.Quote(lines[i])
	}
	return "<missing>"
}
