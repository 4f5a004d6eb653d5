//go:build linux

// Package rawreadtest helps tests of rawread's connections: a loopback
// pair, and waiting until what one end wrote was received.
package rawreadtest

import (
	"context"
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

// Pair dials a 127.0.0.1 listener with dial and returns both ends.
func Pair(t testing.TB, dial func(context.Context, string, string) (net.Conn, error)) (client, server net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			close(accepted)
			return
		}
		accepted <- c
	}()
	client, err = dial(context.Background(), "tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	server, ok := <-accepted
	if !ok {
		t.Fatal("accept failed")
	}
	t.Cleanup(func() { client.Close(); server.Close() })
	return client, server
}
