package probe

import (
	"runtime/metrics"
	"strings"
)

// memoryClassPrefix names the Go runtime's account of every byte it has
// mapped: heap objects, heap room unused or free, released, stacks,
// metadata and the rest.
const memoryClassPrefix = "/memory/classes/"

// The memory classes a resident set is split by (runtime/metrics).
const (
	HeapObjectsClass  = memoryClassPrefix + "heap/objects:bytes"
	HeapUnusedClass   = memoryClassPrefix + "heap/unused:bytes"
	HeapFreeClass     = memoryClassPrefix + "heap/free:bytes"
	HeapReleasedClass = memoryClassPrefix + "heap/released:bytes"
	HeapStacksClass   = memoryClassPrefix + "heap/stacks:bytes"
	OSStacksClass     = memoryClassPrefix + "os-stacks:bytes"
	// TotalClass is every byte the runtime has mapped: the sum of the others.
	TotalClass = memoryClassPrefix + "total:bytes"
)

// MemoryClasses is the Go runtime's account of its memory now, keyed by
// runtime/metrics name (every /memory/classes/ metric), with the live heap
// the last GC found (LiveHeapMetric): together they say what of a resident
// set is data held, garbage not yet collected, room the heap keeps and
// the runtime's own.
func MemoryClasses() map[string]uint64 {
	var samples []metrics.Sample
	for _, d := range metrics.All() {
		if strings.HasPrefix(d.Name, memoryClassPrefix) || d.Name == LiveHeapMetric {
			samples = append(samples, metrics.Sample{Name: d.Name})
		}
	}
	metrics.Read(samples)
	classes := make(map[string]uint64, len(samples))
	for _, s := range samples {
		if s.Value.Kind() == metrics.KindUint64 {
			classes[s.Name] = s.Value.Uint64()
		}
	}
	return classes
}
