package fileread

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vllm-prober/vllm-prober/internal/testfile"
)

func TestRead(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, n int) string {
		p := testfile.Write(t, dir, name, strings.Repeat("x", n))
		return p
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	zero := filepath.Join(dir, "zero")
	if err := os.Symlink("/dev/zero", zero); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, path string
		want       error
		wantText   string
		wantLen    int
	}{
		{name: "at the cap", path: write("ok", 100), wantLen: 100},
		{name: "over the cap", path: write("big", 101), want: ErrTooLarge, wantText: "big: file too large: over the 100 bytes cap"},
		{name: "symlink to /dev/zero", path: zero, want: ErrNotRegular, wantText: "zero: not a regular file (a character device)"},
		{name: "FIFO without a writer", path: fifo, want: ErrNotRegular, wantText: "fifo: not a regular file (a FIFO)"},
		{name: "directory", path: dir, want: ErrNotRegular, wantText: "not a regular file (a directory)"},
		{name: "missing", path: filepath.Join(dir, "nope"), want: os.ErrNotExist, wantText: "nope: no such file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := Read(tc.path, 100)
			if tc.want == nil {
				if err != nil || len(b) != tc.wantLen {
					t.Fatalf("Read = %d bytes, %v; want %d bytes", len(b), err, tc.wantLen)
				}
				return
			}
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.wantText) {
				t.Fatalf("Read error %v, want %v containing %q", err, tc.want, tc.wantText)
			}
			if serr := Stat(tc.path, 100); !errors.Is(serr, tc.want) {
				t.Errorf("Stat error %v, want %v", serr, tc.want)
			}
		})
	}
}

// TestLimitCountsWhatIsRead covers a file that grows past its cap after it
// was checked: the reader stops at the cap plus one byte.
func TestLimitCountsWhatIsRead(t *testing.T) {
	r := Limit(strings.NewReader(strings.Repeat("y", 1000)), "grown", 10)
	buf := make([]byte, 4)
	total := 0
	for range 100 {
		n, err := r.Read(buf)
		total += n
		if err != nil {
			if !errors.Is(err, ErrTooLarge) || total != 10 {
				t.Fatalf("after %d bytes: %v, want ErrTooLarge after 10", total, err)
			}
			return
		}
	}
	t.Fatal("no error reading past the cap")
}

func TestSize(t *testing.T) {
	for n, want := range map[int64]string{4 << 20: "4 MiB", 2 << 30: "2 GiB", 1536: "1536 bytes", 3 << 10: "3 KiB", 100: "100 bytes"} {
		if got := Size(n); got != want {
			t.Errorf("Size(%d) = %q, want %q", n, got, want)
		}
	}
}

// TestWithinGivesUp covers a read that hangs (a stuck mount): it fails
// with ErrTimeout while the read is still blocked.
func TestWithinGivesUp(t *testing.T) {
	unblock := make(chan struct{})
	defer close(unblock)
	_, err := within("stuck.yml", time.Millisecond, func() ([]byte, error) {
		<-unblock
		return nil, nil
	})
	if !errors.Is(err, ErrTimeout) || !strings.Contains(err.Error(), "stuck.yml: read did not finish in 1ms") {
		t.Fatalf("err = %v, want ErrTimeout naming the file", err)
	}
	if b, err := ReadWithin("/dev/null", 10, time.Minute); err == nil || len(b) != 0 {
		t.Errorf("ReadWithin(/dev/null) = %q, %v; want the device refused", b, err)
	}
}
