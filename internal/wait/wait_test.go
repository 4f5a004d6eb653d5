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
