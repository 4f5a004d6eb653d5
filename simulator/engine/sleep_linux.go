//go:build linux

package engine

import (
	"syscall"
	"time"
)

// sleepShort blocks the calling thread for d (at most precisionWindow)
// with one nanosleep syscall, which wakes within tens of microseconds.
func sleepShort(d time.Duration) {
	ts := syscall.NsecToTimespec(int64(d))
	for syscall.Nanosleep(&ts, &ts) == syscall.EINTR {
	}
}
