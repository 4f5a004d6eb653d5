package memtest

import (
	"sync"
	"testing"
)

// TestHeapBytesPer: 1,000 kept 1 KiB slices measure at least 1 KiB each
// and, with the runtime's own allocations, not much more; dropped ones
// measure about nothing.
func TestHeapBytesPer(t *testing.T) {
	const n = 1000
	kept := HeapBytesPer(n, func() any {
		out := make([][]byte, n)
		for i := range out {
			out[i] = make([]byte, 1024)
		}
		return out
	})
	if kept < 1024 || kept > 1200 {
		t.Errorf("%.0f bytes per kept 1 KiB slice, want 1,024–1,200", kept)
	}
	var sink []byte
	dropped := HeapBytesPer(n, func() any {
		for range n {
			sink = make([]byte, 1024)
		}
		return nil
	})
	_ = sink
	if dropped > 100 {
		t.Errorf("%.0f bytes per dropped 1 KiB slice, want about 0", dropped)
	}
}

// grow uses ~depth×128 bytes of stack, then tells parked (when not nil)
// and blocks until release closes.
func grow(depth int, parked *sync.WaitGroup, release chan struct{}) byte {
	var pad [128]byte
	if depth > 0 {
		pad[depth%128] = grow(depth-1, parked, release)
		return pad[0]
	}
	if parked != nil {
		parked.Done()
		<-release
	}
	return pad[1]
}

// TestStackBytesPer: 200 goroutines parked ~12 KiB deep keep at least a
// 16 KiB stack each; goroutines that ended keep about none.
func TestStackBytesPer(t *testing.T) {
	const n = 200
	release := make(chan struct{})
	kept := StackBytesPer(n, func() any {
		var parked sync.WaitGroup
		parked.Add(n)
		for range n {
			go grow(96, &parked, release)
		}
		parked.Wait()
		return nil
	})
	close(release)
	if kept < 16<<10 || kept > 40<<10 {
		t.Errorf("%.0f stack bytes per parked deep goroutine, want 16–40 KiB", kept)
	}
	ended := StackBytesPer(n, func() any {
		var wg sync.WaitGroup
		for range n {
			wg.Go(func() { grow(96, nil, nil) })
		}
		wg.Wait()
		return nil
	})
	if ended > 1024 {
		t.Errorf("%.0f stack bytes per ended goroutine, want about 0", ended)
	}
}

// TestAllocatedBy: 1,000 1 KiB slices count at least 1,000 KiB whether
// kept or dropped, and a function that allocates nothing counts about
// nothing.
func TestAllocatedBy(t *testing.T) {
	var sink []byte
	got := AllocatedBy(func() {
		for range 1000 {
			sink = make([]byte, 1024)
		}
	})
	_ = sink
	if got < 1000<<10 || got > 1100<<10 {
		t.Errorf("%d bytes allocated by 1,000 1 KiB slices, want 1,000–1,100 KiB", got)
	}
	x := 0
	if got := AllocatedBy(func() { x++ }); got > 4<<10 {
		t.Errorf("%d bytes allocated by an increment, want about 0", got)
	}
}
