package wire

import (
	"runtime"
	"testing"
)

// What a watch stream remembers per object it delivered, in heap bytes: a
// fingerprint and, since the newest resourceVersions are kept, the version
// delivered and the newest one carried. Reported against the fingerprint
// alone, measured the same way.
func BenchmarkWhatAStreamRemembersPerObject(b *testing.B) {
	const objects = 100_000
	fingerprints := heapPerEntry(objects, func(n int) any {
		m := make(map[uint64]uint64)
		for i := range n {
			m[uint64(i)*0x9e3779b97f4a7c15] = uint64(i)
		}
		return m
	})
	withVersions := heapPerEntry(objects, func(n int) any {
		m := make(map[uint64]delivered)
		for i := range n {
			m[uint64(i)*0x9e3779b97f4a7c15] = newDelivered(uint64(i), uint64(i))
		}
		return m
	})
	for range b.N {
	}
	b.ReportMetric(fingerprints, "B/object-fingerprint-only")
	b.ReportMetric(withVersions, "B/object-with-versions")
}

// heapPerEntry is the live heap fill(n) adds, per entry.
func heapPerEntry(n int, fill func(int) any) float64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	m := fill(n)
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(m)
	return float64(after.HeapAlloc-before.HeapAlloc) / float64(n)
}
