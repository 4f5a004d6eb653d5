package wait

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestSleep(t *testing.T) {
	cause := errors.New("stopped")
	ended, cancel := context.WithCancelCause(context.Background())
	cancel(cause)
	tests := []struct {
		name string
		ctx  context.Context
		d    time.Duration
		want error
	}{
		{"waits", context.Background(), time.Millisecond, nil},
		{"zero", context.Background(), 0, nil},
		{"negative", context.Background(), -time.Second, nil},
		{"ended before", ended, time.Hour, cause},
		{"ended before, zero", ended, 0, cause},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			err := Sleep(tc.ctx, tc.d)
			if !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
				t.Fatalf("Sleep = %v, want %v", err, tc.want)
			}
			if tc.want == nil && time.Since(start) < tc.d {
				t.Errorf("Sleep returned after %v, before %v", time.Since(start), tc.d)
			}
		})
	}
}

func TestSleepEndsWithContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(10*time.Millisecond, cancel)
	if err := Sleep(ctx, time.Hour); !errors.Is(err, context.Canceled) {
		t.Fatalf("Sleep = %v, want %v", err, context.Canceled)
	}
}

// TestOrTimer: a caller's wait is used as given; without one, the wait is
// a Timer's, which ends with the context's cause.
func TestOrTimer(t *testing.T) {
	calls := 0
	own := func(context.Context, time.Duration) error { calls++; return nil }
	w, release := OrTimer(own)
	if err := w(context.Background(), time.Hour); err != nil || calls != 1 {
		t.Fatalf("caller's wait: err %v, %d calls, want nil and 1", err, calls)
	}
	release()
	w, release = OrTimer(nil)
	defer release()
	if err := w(context.Background(), time.Millisecond); err != nil {
		t.Fatalf("timer wait: %v", err)
	}
	cause := errors.New("stopped")
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(cause)
	if err := w(ctx, time.Hour); !errors.Is(err, cause) {
		t.Fatalf("timer wait of an ended context: %v, want %v", err, cause)
	}
}
