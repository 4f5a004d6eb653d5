package testclock

import (
	"context"
	"testing"
	"time"
)

func TestManual(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c := New(start)
	steps := []struct {
		name string
		move func()
		want time.Time
	}{
		{"new reads start", func() {}, start},
		{"sleep moves on at once", func() { _ = c.Sleep(context.Background(), 2*time.Second) }, start.Add(2 * time.Second)},
		{"a negative sleep does not move", func() { _ = c.Sleep(context.Background(), -time.Second) }, start.Add(2 * time.Second)},
		{"set moves anywhere", func() { c.Set(start.Add(-time.Hour)) }, start.Add(-time.Hour)},
	}
	for _, st := range steps {
		st.move()
		if got := c.Now(); !got.Equal(st.want) {
			t.Errorf("%s: Now() = %v, want %v", st.name, got, st.want)
		}
	}
}

func TestFrozen(t *testing.T) {
	// The collector tests' expected exposition text spells this instant.
	want := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	for i := range 2 {
		if got := Frozen(); !got.Equal(want) || got.Location() != time.UTC {
			t.Fatalf("call %d: Frozen() = %v, want %v (UTC)", i, got, want)
		}
	}
}
