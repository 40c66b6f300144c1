package wire

import (
	"strconv"
	"sync"

	"k8s.io/apimachinery/pkg/types"
)

// ResourceVersions gives the newest resourceVersion the API server sent of a
// cached object. When the events of an unchanged object are left out before
// decoding (a status-only update), the cached object keeps the
// resourceVersion of its last delivered version, which the server has since
// moved past: a write with that version as its precondition would fail
// every time. Each watch stream remembers, per uid, the version it delivered
// and the newest version it left out after it; this reads that.
//
// The newest version is given only for the version the cache holds: if the
// stream delivered a newer one the cache has not applied yet, or none of the
// streams know the object, the cached version is the answer.
type ResourceVersions struct {
	mu      sync.Mutex
	streams map[*unchangedEvents]struct{}
}

// NewResourceVersions returns a ResourceVersions that knows no stream yet;
// pass it in Options.Versions to the transport whose streams it reads.
func NewResourceVersions() *ResourceVersions {
	return &ResourceVersions{streams: map[*unchangedEvents]struct{}{}}
}

// Newest is the newest resourceVersion a live watch stream carried of the
// object with uid whose cached version is cached, or cached itself.
func (v *ResourceVersions) Newest(uid types.UID, cached string) string {
	version := decimal([]byte(cached))
	if v == nil || version == 0 {
		return cached
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	for u := range v.streams {
		if newest := u.newest(string(uid), version); newest > version {
			return strconv.FormatUint(newest, 10)
		}
	}
	return cached
}

func (v *ResourceVersions) add(u *unchangedEvents) {
	if v == nil {
		return
	}
	v.mu.Lock()
	v.streams[u] = struct{}{}
	v.mu.Unlock()
}

func (v *ResourceVersions) remove(u *unchangedEvents) {
	if v == nil {
		return
	}
	v.mu.Lock()
	delete(v.streams, u)
	v.mu.Unlock()
}
