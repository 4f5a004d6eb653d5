//go:build !linux

package wait

import (
	"context"
	"time"
)

// Precise waits d on a runtime timer where timerfd is missing.
func Precise(ctx context.Context, d time.Duration) error { return Sleep(ctx, d) }

// Timer is Precise for a loop that waits again and again; here it waits on
// a runtime timer.
type Timer struct{}

// NewTimer returns a Timer.
func NewTimer() *Timer { return &Timer{} }

// Wait waits d on a runtime timer, or until ctx ends.
func (*Timer) Wait(ctx context.Context, d time.Duration) error { return Sleep(ctx, d) }

// Close does nothing.
func (*Timer) Close() {}
