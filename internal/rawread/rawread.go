// Package rawread dials TCP connections whose reads do not wake the Go
// runtime's monitor thread and know when the bytes they return arrived.
//
// A read through net.Conn is a blocking-style system call: before it the
// runtime wakes its monitor thread (sysmon) from its idle sleep, in case
// the call blocks and its processor must be handed off. A socket read in
// Go never blocks (the socket is non-blocking and the poller waits), so
// that wake-up is pure cost: on a prober streaming one answer, one extra
// thread wake-up and a few short sleeps per streamed event, about a
// quarter of an idle sidecar's CPU (docs/BENCHMARKS.md, "Wake-ups"). Conns
// from Dial read through the connection's syscall.RawConn with a raw
// recvmsg system call instead; the poller, deadlines, Close and errors are
// the same as net.Conn's.
//
// The same call returns the time the kernel stamped on the received data
// (SO_TIMESTAMPNS), which Stamps.Last gives back: when the bytes reached the
// host, not when the process got around to reading them. A prober that
// stamps a streamed event by its arrival does not add its own wake-up
// and scheduling delay to TTFT and ITL. On the sending side, Stamps.Began
// gives the time immediately before the connection began writing its
// latest message (the first write after it last read bytes): an HTTP/1
// request's send time, after the HTTP client's own work on it.
package rawread

import (
	"context"
	"net"
	"time"
)

// Dial dials like a zero net.Dialer (the default of the prober's HTTP
// clients) and returns a TCP connection whose reads are raw system calls
// with receive times where the platform has them (Linux); elsewhere the
// connection as dialed.
func Dial(ctx context.Context, network, addr string) (net.Conn, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	return wrap(c), nil
}

// stamped is a connection that knows when the bytes of its latest read
// arrived.
type stamped interface {
	// arrivedNanos is the kernel's receive time (Unix nanoseconds, wall
	// clock) of the last segment the latest read returned, 0 if unknown.
	arrivedNanos() int64
	// beganNanos is the monotonic time (since epoch) immediately before
	// the first write after the connection last read bytes, 0 before any
	// write.
	beganNanos() int64
}

// epoch is the origin of beganNanos: a time with a monotonic reading, so
// that epoch.Add gives one back.
var epoch = time.Now()

// Stamps gives the receive times of one connection of Dial's.
type Stamps struct{ s stamped }

// StampsOf finds the connection of Dial's that c is, or that c wraps
// (TLS, Prometheus's connection tracking: any wrapper that reports the
// same local and remote addresses), while it is open. ok is false when c
// is not one, or the platform has no receive times.
func StampsOf(c net.Conn) (s Stamps, ok bool) {
	if st := find(c); st != nil {
		return Stamps{st}, true
	}
	return Stamps{}, false
}

// Last returns when the last of the bytes that the connection's latest
// read returned reached this host, as the kernel stamped them (a
// wall-clock time, without a monotonic reading). ok is false when nothing
// was read yet or the kernel attached no time.
func (s Stamps) Last() (at time.Time, ok bool) {
	ns := s.nanos(stamped.arrivedNanos)
	return time.Unix(0, ns), ns != 0
}

// Began returns the time immediately before the connection began writing
// its latest message: its first write since it was dialed or since a read
// last returned bytes. On an HTTP/1 connection, which carries one request
// at a time and writes it only after reading the response before it, that
// is the latest request's send time. The time has a monotonic reading. ok
// is false before the first write.
func (s Stamps) Began() (at time.Time, ok bool) {
	ns := s.nanos(stamped.beganNanos)
	return epoch.Add(time.Duration(ns)), ns != 0
}

// nanos returns get of the connection, 0 without one.
func (s Stamps) nanos(get func(stamped) int64) int64 {
	if s.s == nil {
		return 0
	}
	return get(s.s)
}
