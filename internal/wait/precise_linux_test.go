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
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancelCause(context.Background())
			defer cancel(nil)
			if tc.cancel != nil {
				tc.cancel(cancel)
			}
			start := time.Now()
			err := Precise(ctx, tc.d)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("err = %v, want %v", err, tc.wantErr)
			}
			if tc.wantErr == nil && time.Since(start) < tc.d {
				t.Errorf("woke after %v, before %v", time.Since(start), tc.d)
			}
		})
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
