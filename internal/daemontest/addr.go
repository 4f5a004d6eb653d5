package daemontest

import (
	"net"
	"testing"
)

// FreeAddr returns a loopback host:port whose port was free a moment ago:
// the address of a listener a test starts next, or one nothing listens on
// (connections to it are refused).
func FreeAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return addr
}
