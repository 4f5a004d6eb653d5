//go:build linux

// Package rawreadtest helps tests of receive times.
package rawreadtest

import (
	"net"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Delivered waits until the peer of the TCP connection w has acknowledged
// all that w wrote, and returns the time it saw that: by then the peer's
// kernel has received, and stamped, every byte. (The stamp may be later
// than the write returned: a loaded kernel can hand received packets to a
// thread of its own instead of taking them in during the write.)
func Delivered(t testing.TB, w net.Conn) time.Time {
	t.Helper()
	raw, err := w.(*net.TCPConn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Microsecond) {
		var queued int
		var qerr error
		if err := raw.Control(func(fd uintptr) { queued, qerr = unix.IoctlGetInt(int(fd), unix.SIOCOUTQ) }); err != nil || qerr != nil {
			t.Fatal(err, qerr)
		}
		if queued == 0 {
			return time.Now()
		}
	}
	t.Fatal("the peer acknowledged nothing in 5 s")
	return time.Time{}
}
