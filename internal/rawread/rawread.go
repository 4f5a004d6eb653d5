// Package rawread dials TCP connections whose reads do not wake the Go
// runtime's monitor thread. A read through net.Conn is a blocking-style
// system call: before it the runtime wakes its monitor thread (sysmon)
// from its idle sleep, in case the call blocks and its processor must be
// handed off. A socket read in Go never blocks (the socket is
// non-blocking and the poller waits), so that wake-up is pure cost: on a
// prober streaming one answer, one extra thread wake-up and a few short
// sleeps per streamed event, about a quarter of an idle sidecar's CPU
// (docs/BENCHMARKS.md, "Wake-ups"). Conns from Dial read through the
// connection's syscall.RawConn with a raw read system call instead; the
// poller, deadlines, Close and errors are the same as net.Conn's.
package rawread

import (
	"context"
	"net"
)

// Dial dials like a zero net.Dialer (the default of the prober's HTTP
// clients) and returns a TCP connection whose reads are raw system calls
// where the platform has them (Linux); elsewhere the connection as dialed.
func Dial(ctx context.Context, network, addr string) (net.Conn, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	return wrap(c), nil
}
