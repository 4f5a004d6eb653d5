package daemontest

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// TestSyncBuffer writes from several goroutines while reading: every line
// arrives whole, and Tail keeps the last bytes and marks the cut.
func TestSyncBuffer(t *testing.T) {
	var b SyncBuffer
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 100 {
				fmt.Fprintf(&b, "g%d line %03d\n", g, i)
				_ = b.Tail(20)
			}
		})
	}
	wg.Wait()
	if got, want := len(b.String()), 4*100*len("g0 line 000\n"); got != want {
		t.Fatalf("%d bytes written, want %d", got, want)
	}
	var small SyncBuffer
	fmt.Fprint(&small, "abcdef")
	for _, tc := range []struct {
		n    int
		want string
	}{{6, "abcdef"}, {10, "abcdef"}, {3, "...\ndef"}} {
		if got := small.Tail(tc.n); got != tc.want {
			t.Errorf("Tail(%d) = %q, want %q", tc.n, got, tc.want)
		}
	}
}

// TestOutput: a command's exit code and output come back as they are, a
// non-zero exit is no error, and a command that cannot run is one.
func TestOutput(t *testing.T) {
	code, out, err := Output(exec.Command("sh", "-c", "echo out; echo err >&2; exit 3"))
	if err != nil || code != 3 || out != "out\nerr\n" {
		t.Errorf("exit 3: code %d, output %q, err %v", code, out, err)
	}
	if code, _, err := Output(exec.Command(filepath.Join(t.TempDir(), "absent"))); err == nil {
		t.Errorf("absent binary: code %d and no error", code)
	}
}
