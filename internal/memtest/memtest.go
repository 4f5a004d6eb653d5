// Package memtest measures how much heap a test's data structures keep,
// for the bytes-per-pair and bytes-per-result tests that hold the memory
// of a 1,000-pair prober (docs/BENCHMARKS.md, "1,000 pairs"). One place,
// so each such test measures the same way.
package memtest

import "runtime"

// HeapBytesPer returns the heap that build leaves allocated, per one of n
// items: HeapAlloc after a GC before build and after it. What build
// returns stays reachable until the second reading.
func HeapBytesPer(n int, build func() any) float64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	kept := build()
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(kept)
	return float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / float64(n)
}
