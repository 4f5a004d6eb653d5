package client

import (
	"time"

	"github.com/vllm-prober/vllm-prober/internal/rawread"
)

// arrivalClock stamps the bytes of one response with when they reached
// the host: the kernel's receive time of the connection's latest read
// where there is one (internal/rawread), else the time the read returned.
// So a stream's TTFT and ITLs do not include the prober's own wake-up and
// scheduling delay before it read an event (docs/design.md, "Measurement
// (client side)"). Its stamps never go back and never precede floor.
type arrivalClock struct {
	now   func() time.Time
	conn  rawread.Stamps // the zero value: no receive times
	floor time.Time
	// began is when the request's first byte was written, zero when not
	// known (Requester.arrivalClock).
	began time.Time
}

// stamp returns the arrival time of what the connection's latest read
// returned: now moved back by how long ago the kernel received it, so
// the result keeps now's monotonic reading.
func (a *arrivalClock) stamp() time.Time {
	t := a.now()
	if k, ok := a.conn.Last(); ok {
		// k has no monotonic reading: Sub compares the wall clocks.
		if d := t.Sub(k); d > 0 {
			t = t.Add(-d)
		}
	}
	if t.Before(a.floor) {
		t = a.floor
	}
	a.floor = t
	return t
}

// sentAt returns when the request was sent: began when known, else
// start, the time before it was handed to the HTTP client.
func (a *arrivalClock) sentAt(start time.Time) time.Time {
	if !a.began.IsZero() {
		return a.began
	}
	return start
}
