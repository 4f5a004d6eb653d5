// Package wait holds the module's context-aware sleeps: Sleep, on a runtime
// timer, for tools and harnesses; Timer, the send-time wait of every
// open-loop schedule (the daemon's probe/schedule and bench's
// bench/openloop, through OrTimer), one timerfd re-armed per wait, which
// falls back to Sleep where a timerfd cannot be had; and Precise, a
// timerfd per wait, which the perf harness's schedule part keeps as its
// baseline.
package wait

import (
	"context"
	"time"
)

// Sleep waits d on a runtime timer, or until ctx ends, and then returns
// ctx's cause. A context that has already ended returns at once, even for
// a d that is not positive.
func Sleep(ctx context.Context, d time.Duration) error {
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// OrTimer returns sleep, the wait a caller asked for, or when it is nil the
// Wait of a new Timer, the send-time wait of an open-loop loop: one
// timerfd for all the loop's waits. release closes that Timer (it does
// nothing for the caller's sleep); the loop calls it when it ends.
func OrTimer(sleep func(context.Context, time.Duration) error) (w func(context.Context, time.Duration) error, release func()) {
	if sleep != nil {
		return sleep, func() {}
	}
	t := NewTimer()
	return t.Wait, t.Close
}
