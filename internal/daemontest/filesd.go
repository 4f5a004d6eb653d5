package daemontest

import (
	"encoding/json"
	"os"
	"testing"
)

// WriteFileSD replaces the file_sd file at path with one target group of
// addrs and labels (nil: none), in one rename so that a watching daemon
// never reads half a file.
func WriteFileSD(t testing.TB, path string, addrs []string, labels map[string]string) {
	t.Helper()
	if addrs == nil {
		addrs = []string{}
	}
	group := map[string]any{"targets": addrs}
	if labels != nil {
		group["labels"] = labels
	}
	b, err := json.Marshal([]map[string]any{group})
	if err != nil {
		t.Fatal(err)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}
