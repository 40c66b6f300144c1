// Package sizing is the memory metawatch needs for a number of watched
// objects: the one model that the chart's sizing.expectedObjects and
// `metawatch check --live` recommend a container's memory request and limit
// from.
//
// Memory is linear in the objects cached: a base (the binary, the Go
// runtime, an empty cluster's caches) and a cost per object, steady and at
// the peak of a list or relist. Both costs are fitted to the bench's
// figures for pods, the kind with the most metadata per object
// (docs/sizing.md has the table and how to measure again); other kinds
// cost less. The chart computes the same integer arithmetic in its
// templates (metawatch.sizedResources), and a test holds the two equal.
package sizing

import "fmt"

const (
	// BaseMiB is the resident set with no object cached.
	BaseMiB = 64
	// SteadyBytesPerObject is what each cached object adds to the steady
	// resident set.
	SteadyBytesPerObject = 512
	// PeakBytesPerObject is what each object adds to the resident set at
	// the peak of a list or relist.
	PeakBytesPerObject = 1000
	// LimitPercent is the limit against the peak: the Go runtime's soft
	// memory limit is 90% of the container's (memlimit.Share), and the GC
	// works hard as the heap nears it, so the peak must sit well below.
	LimitPercent = 125
	// MinRequestMiB is the least request recommended, whatever the count.
	MinRequestMiB = 64
	// MinLimitMiB is the least limit recommended, whatever the count:
	// discovery, TLS and a burst of events need room too.
	MinLimitMiB = 256
)

// Resources are a container's recommended memory request and limit.
type Resources struct {
	RequestMiB, LimitMiB int64
}

// For is the recommendation for objects watched objects (negative: 0).
func For(objects int64) Resources {
	objects = max(0, objects)
	steady := BaseMiB + ceilDiv(objects*SteadyBytesPerObject, 1<<20)
	peak := BaseMiB + ceilDiv(objects*PeakBytesPerObject, 1<<20)
	return Resources{
		RequestMiB: max(MinRequestMiB, roundUp(steady, 16)),
		LimitMiB:   max(MinLimitMiB, roundUp(ceilDiv(peak*LimitPercent, 100), 64)),
	}
}

// Request is the memory request as a quantity (512Mi).
func (r Resources) Request() string { return fmt.Sprintf("%dMi", r.RequestMiB) }

// Limit is the memory limit as a quantity.
func (r Resources) Limit() string { return fmt.Sprintf("%dMi", r.LimitMiB) }

func ceilDiv(a, b int64) int64 { return (a + b - 1) / b }

func roundUp(a, step int64) int64 { return ceilDiv(a, step) * step }
