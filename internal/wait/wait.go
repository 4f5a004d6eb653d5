// Package wait holds the one context-aware sleep of the module's tools and
// harnesses. The probe engine's send-time wait is more precise (probe's
// sleepPrecise) and falls back to Sleep where a timerfd cannot be had.
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
