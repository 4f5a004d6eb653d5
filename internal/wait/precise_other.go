//go:build !linux

package wait

import (
	"context"
	"time"
)

// Precise waits d on a runtime timer where timerfd is missing.
func Precise(ctx context.Context, d time.Duration) error { return Sleep(ctx, d) }
