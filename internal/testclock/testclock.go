// Package testclock holds the clocks of tests that decide every time
// themselves: Fixed for tests whose clock never moves, and Manual, whose
// Now is what the test last set and whose Sleep moves the clock on at once
// instead of waiting, so timing tests are exact and fast.
package testclock

import (
	"context"
	"sync"
	"time"
)

// Fixed is the time of tests whose clock never moves: every duration
// measured against it is 0 and every timestamp is exact.
var Fixed = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

// Frozen returns Fixed; it is the Now function of such tests.
func Frozen() time.Time { return Fixed }

// Manual is a clock that moves only when told. It is safe for concurrent
// use.
type Manual struct {
	mu  sync.Mutex
	now time.Time
}

// New returns a Manual clock reading start.
func New(start time.Time) *Manual { return &Manual{now: start} }

// Now returns the clock's time.
func (c *Manual) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Set moves the clock to t.
func (c *Manual) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
}

// Sleep moves the clock on by d, when d is positive, and returns at once.
func (c *Manual) Sleep(_ context.Context, d time.Duration) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if d > 0 {
		c.now = c.now.Add(d)
	}
	return nil
}
