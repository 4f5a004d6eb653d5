package memtest

import "testing"

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
