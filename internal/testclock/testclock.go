// Package testclock holds a clock for tests that decide every time
// themselves: Now is what the test last set, and Sleep moves the clock on
// at once instead of waiting, so timing tests are exact and fast.
package testclock

import (
	"context"
	"sync"
	"time"
)

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
