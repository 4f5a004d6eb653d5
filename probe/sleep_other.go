//go:build !linux

package probe

import (
	"context"
	"time"
)

// sleepPrecise waits d on a runtime timer where timerfd is missing.
func sleepPrecise(ctx context.Context, d time.Duration) error { return sleepRuntimeTimer(ctx, d) }
