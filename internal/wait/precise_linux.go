//go:build linux

package wait

import (
	"context"
	"errors"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// Precise waits d on a timerfd read through the runtime's poller,
// with the read deadline (a runtime timer) at the same instant, or until
// ctx ends. Whichever of the two comes first ends the wait:
//
//   - When the process is idle, the runtime waits for timers in epoll with
//     millisecond granularity, so a runtime timer alone sends up to a
//     millisecond late; the kernel's high-resolution timer makes the fd
//     readable on time and epoll returns at once.
//   - When every P is busy, the poller is consulted only every few
//     milliseconds, but busy Ps run due runtime timers on time.
//
// The goroutine parks meanwhile: no thread blocks, nothing spins. It falls
// back to a runtime timer when the timerfd cannot be made. A wait that is
// already due (d <= 0) returns at once, as Sleep does: an open-loop runner
// that is behind its schedule asks for many, and a timerfd for each (six
// system calls) made it fall further behind at 2,000 requests/s. A loop
// that waits again and again keeps one Timer instead.
func Precise(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return context.Cause(ctx)
	}
	t := NewTimer()
	defer t.Close()
	return t.Wait(ctx, d)
}

// Timer is Precise with its timerfd kept from one wait to the next: a
// wait re-arms it and reads it (two or three system calls) where Precise
// makes, registers, unregisters and closes one (six or seven). One loop
// owns it: waits must not overlap. Close releases the timerfd.
type Timer struct {
	f  *os.File // nil: the timerfd could not be made; waits use Sleep
	fd int
}

// NewTimer returns a Timer; it waits on a runtime timer when no timerfd
// can be made.
func NewTimer() *Timer {
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		return &Timer{}
	}
	f := os.NewFile(uintptr(fd), "timerfd")
	if f == nil {
		unix.Close(fd)
		return &Timer{}
	}
	return &Timer{f: f, fd: fd}
}

// Wait waits d as Precise does, on t's timerfd.
func (t *Timer) Wait(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return context.Cause(ctx)
	}
	if t.f == nil {
		return Sleep(ctx, d)
	}
	end := time.Now().Add(d)
	// Arming resets the count of expirations, so an expiry left over from
	// a wait that the deadline ended first cannot end this one early.
	spec := unix.ItimerSpec{Value: unix.NsecToTimespec(int64(max(d, time.Nanosecond)))}
	if err := unix.TimerfdSettime(t.fd, 0, &spec, nil); err != nil {
		return Sleep(ctx, d)
	}
	if err := t.f.SetReadDeadline(end); err != nil {
		return Sleep(ctx, d)
	}
	stop := context.AfterFunc(ctx, func() { _ = t.f.SetReadDeadline(time.Unix(1, 0)) })
	defer stop()
	var expirations [8]byte
	_, err := t.f.Read(expirations[:])
	if cause := context.Cause(ctx); cause != nil {
		return cause
	}
	if err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
		return Sleep(ctx, time.Until(end))
	}
	return nil
}

// Close releases the timerfd.
func (t *Timer) Close() {
	if t.f != nil {
		_ = t.f.Close()
	}
}
