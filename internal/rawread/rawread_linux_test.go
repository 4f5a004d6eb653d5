package rawread

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/vllm-prober/vllm-prober/internal/rawread/rawreadtest"
)

// TestReadLikeTCPConn reads data, a deadline, EOF, a reset and a Close
// through Dial's conn and a plain net.TCPConn: the same bytes and the same
// errors by errors.Is and net.Error.
func TestReadLikeTCPConn(t *testing.T) {
	plain := func(ctx context.Context, network, addr string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	}
	for _, dial := range []struct {
		name string
		fn   func(context.Context, string, string) (net.Conn, error)
	}{{"net.TCPConn", plain}, {"rawread", Dial}} {
		t.Run(dial.name, func(t *testing.T) {
			t.Run("data then EOF", func(t *testing.T) {
				c, s := rawreadtest.Pair(t, dial.fn)
				go func() {
					s.Write([]byte("data: one\n\n"))
					time.Sleep(10 * time.Millisecond)
					s.Write([]byte("data: two\n\n"))
					s.Close()
				}()
				got, err := io.ReadAll(c)
				if err != nil || string(got) != "data: one\n\ndata: two\n\n" {
					t.Errorf("ReadAll = %q, %v", got, err)
				}
				if n, err := c.Read(make([]byte, 8)); n != 0 || err != io.EOF {
					t.Errorf("Read after EOF = %d, %v; want 0, EOF", n, err)
				}
			})
			t.Run("empty buffer", func(t *testing.T) {
				c, _ := rawreadtest.Pair(t, dial.fn)
				if n, err := c.Read(nil); n != 0 || err != nil {
					t.Errorf("Read(nil) = %d, %v; want 0, nil", n, err)
				}
			})
			t.Run("deadline", func(t *testing.T) {
				c, _ := rawreadtest.Pair(t, dial.fn)
				c.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
				_, err := c.Read(make([]byte, 8))
				var ne net.Error
				var oe *net.OpError
				if !errors.Is(err, os.ErrDeadlineExceeded) || !errors.As(err, &ne) || !ne.Timeout() ||
					!errors.As(err, &oe) || oe.Op != "read" {
					t.Errorf("Read past the deadline = %v, want a read timeout", err)
				}
			})
			t.Run("closed while reading", func(t *testing.T) {
				c, _ := rawreadtest.Pair(t, dial.fn)
				go func() {
					time.Sleep(20 * time.Millisecond)
					c.Close()
				}()
				if _, err := c.Read(make([]byte, 8)); !errors.Is(err, net.ErrClosed) {
					t.Errorf("Read on a closed conn = %v, want net.ErrClosed", err)
				}
			})
			t.Run("reset by peer", func(t *testing.T) {
				c, s := rawreadtest.Pair(t, dial.fn)
				s.(*net.TCPConn).SetLinger(0)
				s.Close()
				_, err := c.Read(make([]byte, 8))
				var oe *net.OpError
				if !errors.Is(err, syscall.ECONNRESET) || !errors.As(err, &oe) || oe.Op != "read" {
					t.Errorf("Read after a reset = %v, want a read ECONNRESET", err)
				}
			})
		})
	}
}

// TestDialRaw: a TCP conn from Dial reads with raw system calls; a dial
// error is returned as it is.
func TestDialRaw(t *testing.T) {
	c, _ := rawreadtest.Pair(t, Dial)
	if _, raw := c.(*conn); !raw {
		t.Errorf("Dial returned %T, want *rawread.conn", c)
	}
	if _, err := Dial(context.Background(), "tcp", "127.0.0.1:1"); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("Dial to a closed port = %v, want ECONNREFUSED", err)
	}
}

// arrived is the receive time of c's latest read, through StampsOf.
func arrived(c net.Conn) (time.Time, bool) {
	s, ok := StampsOf(c)
	if !ok {
		return time.Time{}, false
	}
	return s.Last()
}

// hiding wraps a connection as Prometheus's connection tracking does: a
// struct of its own that embeds it.
type hiding struct{ net.Conn }

// TestStampsAreReceiveTimes: a connection's stamp is when the bytes of
// its latest read reached the host, not when they were read: each byte is
// written and received, and read only later, and its time lies between the
// write and its receipt. A TLS
// connection over Dial's, or a wrapper that hides it, gives its
// connection's time while it is open; the end of the stream keeps the
// last bytes' time; other connections have none.
func TestStampsAreReceiveTimes(t *testing.T) {
	c, s := rawreadtest.Pair(t, Dial)
	buf := make([]byte, 16)
	var last time.Time
	for i := range 50 {
		before := time.Now()
		if _, err := s.Write([]byte{'x'}); err != nil {
			t.Fatal(err)
		}
		after := rawreadtest.Delivered(t, s)
		time.Sleep(2 * time.Millisecond)
		if _, err := c.Read(buf); err != nil {
			t.Fatal(err)
		}
		at, ok := arrived(c)
		if !ok {
			if i == 0 {
				continue // the kernel may turn stamping on after the first segment
			}
			t.Fatalf("read %d has no receive time", i)
		}
		if at.Before(before) || at.After(after) {
			t.Fatalf("read %d: receive time %v after its write began, want before its receipt, %v", i, at.Sub(before), after.Sub(before))
		}
		for _, w := range []net.Conn{tls.Client(c, &tls.Config{}), hiding{c}, tls.Client(hiding{c}, &tls.Config{})} {
			if wAt, ok := arrived(w); !ok || !wAt.Equal(at) {
				t.Fatalf("through %T: %v, %v; want %v", w, wAt, ok, at)
			}
		}
		last = at
	}
	s.Close()
	if _, err := c.Read(buf); err != io.EOF {
		t.Fatalf("Read at the end = %v, want EOF", err)
	}
	if at, ok := arrived(c); !ok || !at.Equal(last) {
		t.Errorf("after EOF: %v, %v; want the last bytes' %v", at, ok, last)
	}
	w := hiding{c}
	c.Close()
	if _, ok := StampsOf(w); ok {
		t.Error("a wrapper of a closed connection still finds it")
	}
	plain, _ := rawreadtest.Pair(t, func(ctx context.Context, network, addr string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	})
	if _, ok := StampsOf(plain); ok {
		t.Error("a net.TCPConn has receive times")
	}
}

// TestBeganIsFirstWriteAfterRead: Began is the time before the first
// write since the dial or since a read returned bytes, as a wrapper sees
// it too: later writes of the same message and a read that returned
// nothing leave it.
func TestBeganIsFirstWriteAfterRead(t *testing.T) {
	c, s := rawreadtest.Pair(t, Dial)
	st, ok := StampsOf(hiding{c})
	if !ok {
		t.Fatal("no stamps")
	}
	if at, ok := st.Began(); ok {
		t.Fatalf("Began before any write = %v", at)
	}
	write := func(w net.Conn, b string) (before, after time.Time) {
		t.Helper()
		before = time.Now()
		if _, err := w.Write([]byte(b)); err != nil {
			t.Fatal(err)
		}
		return before, time.Now()
	}
	began := func() time.Time {
		t.Helper()
		at, ok := st.Began()
		if !ok {
			t.Fatal("Began after a write: none")
		}
		return at
	}
	buf := make([]byte, 64)
	for i := range 3 {
		before, after := write(c, "request head ")
		first := began()
		if first.Before(before) || first.After(after) {
			t.Fatalf("message %d: Began %v after the write began, want within its %v", i, first.Sub(before), after.Sub(before))
		}
		time.Sleep(time.Millisecond)
		write(c, "and body")
		c.SetReadDeadline(time.Now().Add(time.Millisecond))
		if _, err := c.Read(buf); !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("Read with nothing sent = %v, want a timeout", err)
		}
		c.SetReadDeadline(time.Time{})
		if got := began(); !got.Equal(first) {
			t.Fatalf("message %d: Began moved from %v to %v by a second write", i, first, got)
		}
		if _, err := s.Write([]byte("response")); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Read(buf); err != nil {
			t.Fatal(err)
		}
		if got := began(); !got.Equal(first) {
			t.Fatalf("message %d: Began moved by a read", i)
		}
	}
	if m := time.Until(began()); m > 0 || m < -time.Minute {
		t.Errorf("Began is %v from now, want a recent time on the same clock", m)
	}
}

// TestReadAllocatesNothing: a read that finds bytes waiting allocates
// nothing (no closure per read), so a streamed event costs no garbage.
func TestReadAllocatesNothing(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	client, server := rawreadtest.Pair(t, Dial)
	msg, buf := []byte("data: x\n\n"), make([]byte, 64)
	allocs := testing.AllocsPerRun(200, func() {
		if _, err := server.Write(msg); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(client, buf[:len(msg)]); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("%.1f allocations per write and read, want 0", allocs)
	}
}
