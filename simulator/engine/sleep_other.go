//go:build !linux

package engine

import "time"

// sleepShort falls back to the runtime timer where nanosleep is missing.
func sleepShort(d time.Duration) { time.Sleep(d) }
