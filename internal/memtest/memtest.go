// Package memtest measures how much heap (or goroutine stack) a test's
// data structures keep, for the bytes-per-pair and bytes-per-result tests
// that hold the memory of a 1,000-pair prober (docs/BENCHMARKS.md, "1,000
// pairs"). One place, so each such test measures the same way.
package memtest

import (
	"runtime"
	"runtime/metrics"
)

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

// StackBytesPer returns the goroutine stack memory that build leaves in
// use, per one of n items: runtime/metrics' stack bytes after a GC (which
// shrinks stacks and frees unused ones) before build and after it.
func StackBytesPer(n int, build func() any) float64 {
	sample := []metrics.Sample{{Name: "/memory/classes/heap/stacks:bytes"}}
	read := func() int64 {
		runtime.GC()
		metrics.Read(sample)
		return int64(sample[0].Value.Uint64())
	}
	before := read()
	kept := build()
	after := read()
	runtime.KeepAlive(kept)
	return float64(after-before) / float64(n)
}

// AllocatedBy returns the heap bytes allocated while f runs, kept or not:
// the growth of TotalAlloc. Allocations of other goroutines meanwhile
// count too, so a test holds it to a bound well clear of them.
func AllocatedBy(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}
