// Package memlimit is how metawatch's process asks the Go runtime's GC to
// use memory: a soft memory limit from the container's, as
// --container-memory-limit sets it (FromContainer), and a tighter pace while
// lists stream in and while the controllers are handed what they brought
// (Lists).
//
// Both are shared by the binary and the bench's variants, so the bench
// measures what the binary does. The pace during lists is there because a
// container's memory limit is sized by its peak, and a cache's peak is its
// lists: they allocate many times what they keep, and at GOGC's default
// the heap may grow to twice what the last GC found live.
package memlimit

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/resource"
)

// Share is the part of the container's memory limit the Go runtime's soft
// limit is set to. The rest is for what the runtime does not count against
// it (the kernel's share of thread stacks and sockets, memory freed but not
// yet returned): with the whole limit, the GC would work hard only once the
// container is as good as OOM-killed.
const Share = 0.9

// FromContainer is the soft memory limit (bytes) that --container-memory-limit
// asks for, or 0 for none: the flag is empty, or GOMEMLIMIT is set (the
// runtime honours that itself, and an operator who set it meant it).
func FromContainer(containerLimit, gomemlimit string) (int64, error) {
	if containerLimit == "" || gomemlimit != "" {
		return 0, nil
	}
	q, err := resource.ParseQuantity(containerLimit)
	if err != nil || q.Sign() <= 0 {
		return 0, fmt.Errorf("--container-memory-limit=%q: want the container's memory limit in bytes or as a quantity such as 1Gi (the chart sets it from resources.limits.memory), or nothing for no GC memory limit", containerLimit)
	}
	return int64(float64(q.Value()) * Share), nil
}
