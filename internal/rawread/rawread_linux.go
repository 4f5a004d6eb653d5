package rawread

import (
	"errors"
	"io"
	"net"
	"os"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// conn is a TCP connection whose Read is a raw read system call.
type conn struct {
	net.Conn
	raw syscall.RawConn
}

// wrap returns c with raw reads when it is a TCP connection.
func wrap(c net.Conn) net.Conn {
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return c
	}
	raw, err := tc.SyscallConn()
	if err != nil {
		return c
	}
	return &conn{Conn: tc, raw: raw}
}

// Read reads like net.TCPConn.Read: it waits in the poller while the
// socket has nothing, honours the read deadline and Close, returns io.EOF
// at the end and wraps errors in *net.OpError "read" as net does.
func (c *conn) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	var n int
	var errno unix.Errno
	err := c.raw.Read(func(fd uintptr) bool {
		for {
			r, e := read(fd, p)
			switch e {
			case unix.EINTR:
				continue
			case unix.EAGAIN:
				return false // wait in the poller
			}
			n, errno = int(r), e
			return true
		}
	})
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

// opError wraps err as net.TCPConn.Read does.
func (c *conn) opError(err error) error {
	return &net.OpError{Op: "read", Net: "tcp", Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: err}
}

// read is one read system call on the non-blocking socket fd. Under the
// race detector it is syscall.Read, whose race annotations let the
// detector see that what a peer wrote before sending happened before it
// was read; a raw system call has none, and tests would report races that
// are not there. It must be the syscall package's: net writes through
// syscall.Write, and x/sys/unix's Read annotates a synchronisation point of
// its own that those writes never release.
func read(fd uintptr, p []byte) (int, unix.Errno) {
	if raceEnabled {
		n, err := syscall.Read(int(fd), p)
		var e unix.Errno
		if err != nil && !errors.As(err, &e) {
			e = unix.EIO // not on Linux, whose syscall.Read returns an Errno
		}
		return n, e
	}
	r, _, e := unix.RawSyscall(unix.SYS_READ, fd, uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
	return int(r), e
}
