//go:build !linux

package schedule

import (
	"context"
	"time"

	"github.com/vllm-prober/vllm-prober/internal/wait"
)

// sleepPrecise waits d on a runtime timer where timerfd is missing.
func sleepPrecise(ctx context.Context, d time.Duration) error { return wait.Sleep(ctx, d) }
