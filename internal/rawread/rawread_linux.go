package rawread

import (
	"errors"
	"io"
	"net"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// conn is a TCP connection whose Read is a raw recvmsg system call that
// also takes the kernel's receive time of what it read.
type conn struct {
	net.Conn
	raw syscall.RawConn
	// arrived is the kernel's receive time (Unix nanoseconds, wall clock)
	// of the last segment the latest read returned; 0 when it had none.
	arrived atomic.Int64
	// began is beganNanos's time; reading is true once a read returned
	// bytes and until the next write, which then sets began.
	began   atomic.Int64
	reading atomic.Bool

	// The latest read's message and control buffer: reads of one
	// connection never overlap (its read lock), so one set serves all.
	msg unix.Msghdr
	iov unix.Iovec
	oob [64]byte

	// The read in progress, under readMu: its buffer, what it returned,
	// and readFn, the function handed to raw.Read, bound once so that a
	// read allocates nothing (a closure over p would, every read).
	readMu sync.Mutex
	p      []byte
	n      int
	errno  unix.Errno
	readFn func(fd uintptr) bool
}

// wrap returns c with raw reads when it is a TCP connection, and asks the
// kernel to stamp each segment it receives (SO_TIMESTAMPNS); a kernel
// that refuses leaves reads without stamps.
func wrap(c net.Conn) net.Conn {
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return c
	}
	raw, err := tc.SyscallConn()
	if err != nil {
		return c
	}
	keepStampsOn.Do(holdStamps)
	_ = raw.Control(func(fd uintptr) {
		_ = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, 1)
	})
	rc := &conn{Conn: tc, raw: raw}
	rc.readFn = rc.readOnce
	rc.reading.Store(true)
	if k, ok := keyOf(tc); ok {
		dialed.add(k, rc)
	}
	return rc
}

// Close closes the connection and forgets it.
func (c *conn) Close() error {
	if k, ok := keyOf(c.Conn); ok {
		dialed.remove(k, c)
	}
	return c.Conn.Close()
}

// connKey names an open TCP connection: its two addresses.
type connKey struct{ local, remote netip.AddrPort }

// keyOf returns c's key; ok is false when c is not a TCP connection.
func keyOf(c net.Conn) (connKey, bool) {
	l, lok := c.LocalAddr().(*net.TCPAddr)
	r, rok := c.RemoteAddr().(*net.TCPAddr)
	if !lok || !rok {
		return connKey{}, false
	}
	return connKey{l.AddrPort(), r.AddrPort()}, true
}

// registry is the open connections of Dial's by their addresses, so that
// a connection wrapped by a layer that hides it (Prometheus's HTTP
// client wraps every dialed connection to count it) can still be found.
type registry struct {
	mu    sync.Mutex
	conns map[connKey]*conn
}

// dialed holds the connections of Dial's from dial to Close.
var dialed = registry{conns: map[connKey]*conn{}}

func (r *registry) add(k connKey, c *conn) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.conns[k] = c
}

func (r *registry) remove(k connKey, c *conn) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.conns[k] == c {
		delete(r.conns, k)
	}
}

func (r *registry) get(k connKey) *conn {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.conns[k]
}

// find returns the connection of Dial's that c is or wraps, or nil.
func find(c net.Conn) stamped {
	if rc, ok := c.(*conn); ok {
		return rc
	}
	if k, ok := keyOf(c); ok {
		if rc := dialed.get(k); rc != nil {
			return rc
		}
	}
	return nil
}

// keepStampsOn runs holdStamps once, at the first dial.
var keepStampsOn sync.Once

// holdStamps opens a socket that asks for receive times and is never
// closed. The kernel stamps received packets while any socket on the host
// asks for it, and turns the stamping on and off some time after the
// first such socket opens and the last one closes: without this one, a
// prober whose connections all closed while idle would dial the next
// with stamping off and read its first segments without receive times.
// It costs a descriptor, and the kernel reading the clock per packet.
func holdStamps() {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return
	}
	if unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, 1) != nil {
		_ = unix.Close(fd)
	}
}

// Read reads like net.TCPConn.Read: it waits in the poller while the
// socket has nothing, honours the read deadline and Close, returns io.EOF
// at the end and wraps errors in *net.OpError "read" as net does.
func (c *conn) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	c.readMu.Lock()
	c.p = p
	err := c.raw.Read(c.readFn)
	n, errno := c.n, c.errno
	c.p, c.n, c.errno = nil, 0, 0
	c.readMu.Unlock()
	switch {
	case err != nil:
		var oe *net.OpError
		if errors.As(err, &oe) {
			err = oe.Err
		}
		return 0, c.opError(err)
	case errno != 0:
		return 0, c.opError(os.NewSyscallError("read", errno))
	case n == 0:
		return 0, io.EOF
	}
	return n, nil
}

// readOnce is raw.Read's function for Read: a recvmsg into c.p, again on
// EINTR; false (wait in the poller) when the socket has nothing.
func (c *conn) readOnce(fd uintptr) bool {
	for {
		r, e := c.recv(fd, c.p)
		switch e {
		case unix.EINTR:
			continue
		case unix.EAGAIN:
			return false
		}
		c.n, c.errno = r, e
		return true
	}
}

// Write writes like net.TCPConn.Write; the first write after a read that
// returned bytes (or after the dial) records the time before it.
func (c *conn) Write(p []byte) (int, error) {
	if c.reading.Load() {
		c.began.Store(max(int64(time.Since(epoch)), 1))
		c.reading.Store(false)
	}
	return c.Conn.Write(p)
}

// arrivedNanos implements stamped.
func (c *conn) arrivedNanos() int64 { return c.arrived.Load() }

// beganNanos implements stamped.
func (c *conn) beganNanos() int64 { return c.began.Load() }

// opError wraps err as net.TCPConn.Read does.
func (c *conn) opError(err error) error {
	return &net.OpError{Op: "read", Net: "tcp", Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: err}
}

// recv is one recvmsg system call on the non-blocking socket fd into p;
// it records the receive time the kernel attached, if any.
func (c *conn) recv(fd uintptr, p []byte) (int, unix.Errno) {
	c.iov.Base = &p[0]
	c.iov.SetLen(len(p))
	c.msg = unix.Msghdr{Iov: &c.iov, Iovlen: 1, Control: &c.oob[0]}
	c.msg.SetControllen(len(c.oob))
	r, _, e := unix.RawSyscall(unix.SYS_RECVMSG, fd, uintptr(unsafe.Pointer(&c.msg)), 0)
	c.iov.Base = nil // p is the caller's
	if e != 0 {
		return 0, e
	}
	if raceEnabled {
		raceAcquire(fd)
	}
	if r > 0 { // an end of stream keeps the time of the last bytes
		var at int64
		if c.msg.Flags&unix.MSG_CTRUNC == 0 {
			at = receiveTime(c.oob[:c.msg.Controllen])
		}
		c.arrived.Store(at)
		c.reading.Store(true)
	}
	return int(r), 0
}

// receiveTime returns the SCM_TIMESTAMPNS time (Unix nanoseconds) in the
// control messages b, or 0.
func receiveTime(b []byte) int64 {
	for len(b) > 0 {
		h, data, rest, err := unix.ParseOneSocketControlMessage(b)
		if err != nil {
			return 0
		}
		var ts unix.Timespec
		if h.Level == unix.SOL_SOCKET && h.Type == unix.SCM_TIMESTAMPNS && len(data) >= int(unsafe.Sizeof(ts)) {
			copy(unsafe.Slice((*byte)(unsafe.Pointer(&ts)), unsafe.Sizeof(ts)), data)
			return ts.Nano()
		}
		b = rest
	}
	return 0
}

// raceAcquire gives the race detector what a read system call of the
// syscall package gives it and a raw recvmsg does not: that what a peer
// wrote before sending happened before it was read. Without it, tests
// would report races that are not there. It must be the syscall
// package's: net writes through syscall.Write, whose release only
// syscall.Read acquires; an empty read returns at once and takes nothing
// from the socket.
func raceAcquire(fd uintptr) {
	_, _ = syscall.Read(int(fd), nil)
}
