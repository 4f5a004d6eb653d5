//go:build linux

package wait

import (
	"context"
	"errors"
	"testing"
	"time"
)

// errShutdown and errRemoved stand for the causes a caller ends a wait with.
var (
	errShutdown = errors.New("shutdown")
	errRemoved  = errors.New("removed")
)

// TestPrecise checks the timerfd wait: it never ends early, and it
// ends with the context's cause when the context ends first.
func TestPrecise(t *testing.T) {
	tests := []struct {
		name    string
		d       time.Duration
		cancel  func(context.CancelCauseFunc)
		wantErr error
	}{
		{name: "waits", d: 3 * time.Millisecond},
		{name: "zero", d: 0},
		{name: "overdue", d: -time.Second},
		{name: "overdue, cancelled", d: -time.Second, cancel: func(c context.CancelCauseFunc) { c(errShutdown) }, wantErr: errShutdown},
		{name: "already cancelled", d: time.Hour, cancel: func(c context.CancelCauseFunc) { c(errShutdown) }, wantErr: errShutdown},
		{name: "cancelled while waiting", d: time.Hour, wantErr: errRemoved,
			cancel: func(c context.CancelCauseFunc) { time.AfterFunc(5*time.Millisecond, func() { c(errRemoved) }) }},
	}
	// The same cases through Precise and, one after another, through one
	// Timer: a Timer's earlier waits (cancelled ones included) do not end
	// a later one early.
	timer := NewTimer()
	defer timer.Close()
	for name, wait := range map[string]func(context.Context, time.Duration) error{"Precise": Precise, "Timer": timer.Wait} {
		for _, tc := range tests {
			t.Run(name+"/"+tc.name, func(t *testing.T) {
				ctx, cancel := context.WithCancelCause(context.Background())
				defer cancel(nil)
				if tc.cancel != nil {
					tc.cancel(cancel)
				}
				start := time.Now()
				err := wait(ctx, tc.d)
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("err = %v, want %v", err, tc.wantErr)
				}
				if tc.wantErr == nil && time.Since(start) < tc.d {
					t.Errorf("woke after %v, before %v", time.Since(start), tc.d)
				}
			})
		}
	}
}

// TestTimerStaleExpiry checks that an expiry nobody read (the wait was
// cancelled before its timerfd fired) does not end the Timer's next wait
// early.
func TestTimerStaleExpiry(t *testing.T) {
	timer := NewTimer()
	defer timer.Close()
	if timer.f == nil {
		t.Fatal("no timerfd")
	}
	// Cancelled before it waits, the wait still arms the timerfd, then
	// ends by its context, whatever the machine's load.
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(errRemoved)
	if err := timer.Wait(ctx, 2*time.Millisecond); !errors.Is(err, errRemoved) {
		t.Fatalf("cancelled wait: err = %v", err)
	}
	time.Sleep(5 * time.Millisecond) // the timerfd expires, unread
	const d = 20 * time.Millisecond
	start := time.Now()
	if err := timer.Wait(context.Background(), d); err != nil {
		t.Fatal(err)
	}
	if waited := time.Since(start); waited < d {
		t.Errorf("woke after %v, before %v", waited, d)
	}
}

// TestPreciseDue checks that a wait already due makes no timer: no
// allocation, where a timerfd wait allocates its file and context hook.
func TestPreciseDue(t *testing.T) {
	ctx := context.Background()
	for _, d := range []time.Duration{0, -time.Millisecond} {
		if n := testing.AllocsPerRun(100, func() { _ = Precise(ctx, d) }); n != 0 {
			t.Errorf("Precise(%v): %.0f allocations per wait, want 0", d, n)
		}
	}
}

// BenchmarkPreciseDue measures a wait that is already due, which an
// open-loop runner behind its schedule asks for once per request.
func BenchmarkPreciseDue(b *testing.B) {
	ctx := context.Background()
	for b.Loop() {
		if err := Precise(ctx, -time.Microsecond); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPrecise measures the CPU cost of one short precise wait
// (timerfd create, arm, poll, close).
func BenchmarkPrecise(b *testing.B) {
	ctx := context.Background()
	for b.Loop() {
		if err := Precise(ctx, 10*time.Microsecond); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkTimer measures the CPU cost of one short wait on a kept Timer
// (arm, poll), as the daemon's and bench's loops wait.
func BenchmarkTimer(b *testing.B) {
	ctx := context.Background()
	t := NewTimer()
	defer t.Close()
	for b.Loop() {
		if err := t.Wait(ctx, 10*time.Microsecond); err != nil {
			b.Fatal(err)
		}
	}
}
