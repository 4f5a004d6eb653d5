package discovery

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// eventually is how long a test waits for something that should happen
// within a refresh or a file change: generous, for a loaded machine.
const eventually = 10 * time.Second

// event is one call of Run's update or fail.
type event struct {
	set []Replica
	err error
}

func (e event) String() string {
	if e.err != nil {
		return "fail(" + e.err.Error() + ")"
	}
	return fmt.Sprintf("update(%v)", e.set)
}

// running is a Discoverer under Run, its calls recorded in order.
type running struct {
	t      *testing.T
	events chan event
	cancel context.CancelFunc
	done   chan struct{}
}

// start runs d until the test ends (or stop), failing the test if two
// calls overlap or a call comes after Run returned.
func start(t *testing.T, d *Discoverer) *running {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{t: t, events: make(chan event, 100), cancel: cancel, done: make(chan struct{})}
	var inCall, returned atomic.Bool
	record := func(e event) {
		if returned.Load() {
			t.Errorf("%v after Run returned", e)
		}
		if !inCall.CompareAndSwap(false, true) {
			t.Errorf("%v overlaps another call", e)
		}
		defer inCall.Store(false)
		select {
		case r.events <- e:
		case <-ctx.Done():
		}
	}
	go func() {
		defer close(r.done)
		d.Run(ctx, func(set []Replica) { record(event{set: set}) }, func(err error) { record(event{err: err}) }, func() {
			// Checked like the others, not recorded: the tests wait for
			// updates and failures (TestRunReportsUnchanged for these).
			if returned.Load() {
				t.Errorf("unchanged after Run returned")
			}
			if !inCall.CompareAndSwap(false, true) {
				t.Errorf("unchanged overlaps another call")
			}
			inCall.Store(false)
		})
		returned.Store(true)
	}()
	t.Cleanup(r.stop)
	return r
}

// stop cancels Run and waits for it to return.
func (r *running) stop() {
	r.t.Helper()
	r.cancel()
	select {
	case <-r.done:
	case <-time.After(eventually):
		r.t.Fatalf("Run did not return within %s of its context ending", eventually)
	}
}

// next returns the next call.
func (r *running) next() event {
	r.t.Helper()
	select {
	case e := <-r.events:
		return e
	case <-time.After(eventually):
		r.t.Fatalf("no update or fail within %s", eventually)
		return event{}
	}
}

// wantUpdate waits for the next update, skipping fails when skipFails, and
// checks its set.
func (r *running) wantUpdate(want []Replica, skipFails bool) {
	r.t.Helper()
	for {
		e := r.next()
		if e.err != nil && skipFails {
			continue
		}
		if e.err != nil || !reflect.DeepEqual(e.set, want) {
			r.t.Fatalf("got %v, want update(%v)", e, want)
		}
		return
	}
}

// wantFail waits for the next call and checks it is a fail whose message
// contains every part of want.
func (r *running) wantFail(want ...string) {
	r.t.Helper()
	e := r.next()
	if e.err == nil {
		r.t.Fatalf("got %v, want fail(...%s...)", e, strings.Join(want, "..."))
	}
	for _, part := range want {
		if !strings.Contains(e.err.Error(), part) {
			r.t.Fatalf("got %v, want fail(...%s...)", e, strings.Join(want, "..."))
		}
	}
}

// firstCall runs d until its first call and returns it.
func firstCall(t *testing.T, d *Discoverer) event {
	t.Helper()
	r := start(t, d)
	defer r.stop()
	return r.next()
}

// replicas builds a set from addresses, without labels.
func replicas(addrs ...string) []Replica {
	set := make([]Replica, len(addrs))
	for i, a := range addrs {
		set[i] = Replica{Addr: a}
	}
	return set
}

// countingSource finds what its sets say, one per lookup, the last one
// over and over, and fails where an error is given; it records overlapping
// lookups.
type countingSource struct {
	mu      sync.Mutex
	sets    [][]Replica
	errs    []error
	calls   int
	overlap atomic.Bool
	busy    atomic.Bool
}

func (s *countingSource) lookup(context.Context) ([]Replica, error) {
	if !s.busy.CompareAndSwap(false, true) {
		s.overlap.Store(true)
	}
	defer s.busy.Store(false)
	s.mu.Lock()
	defer s.mu.Unlock()
	i := min(s.calls, len(s.sets)-1)
	s.calls++
	if i < len(s.errs) && s.errs[i] != nil {
		return nil, s.errs[i]
	}
	return s.sets[i], nil
}

// TestRunReportsChangesOnly checks that Run reports the first set (even
// empty), then only sets that differ from the last one reported, and that
// a failure between two equal sets reports nothing but the failure.
func TestRunReportsChangesOnly(t *testing.T) {
	a := replicas("10.0.0.1:8000")
	b := replicas("10.0.0.1:8000", "10.0.0.2:8000")
	src := &countingSource{
		sets: [][]Replica{nil, nil, a, a, nil, a, b},
		errs: []error{nil, nil, nil, nil, fmt.Errorf("boom")},
	}
	d := &Discoverer{mechanism: "test", refresh: 5 * time.Millisecond, src: src, logger: discard}
	r := start(t, d)
	r.wantUpdate([]Replica{}, false)
	r.wantUpdate(a, false)
	r.wantFail("test: boom")
	r.wantUpdate(b, false)
	r.stop()
	if src.overlap.Load() {
		t.Error("lookups overlapped")
	}
}

// TestRunReportsUnchanged checks that a successful refresh that finds the
// set last reported calls unchanged, so that a caller learns that a
// failure is over although the set did not change.
func TestRunReportsUnchanged(t *testing.T) {
	a := replicas("10.0.0.1:8000")
	src := &countingSource{sets: [][]Replica{a, a, a}, errs: []error{nil, fmt.Errorf("boom"), nil}}
	d := &Discoverer{mechanism: "test", refresh: 5 * time.Millisecond, src: src, logger: discard}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var calls []string
	note := func(call string) {
		calls = append(calls, call)
		if len(calls) == 3 {
			cancel()
		}
	}
	d.Run(ctx, func(set []Replica) { note(fmt.Sprint("update", set)) }, func(err error) { note("fail " + err.Error()) }, func() { note("unchanged") })
	want := []string{fmt.Sprint("update", a), "fail test: boom", "unchanged"}
	if !reflect.DeepEqual(calls, want) {
		t.Errorf("calls %q, want %q", calls, want)
	}
}
