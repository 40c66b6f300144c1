package rulecontroller

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"

	"github.com/metawatch/metawatch/pkg/ownership"
)

// reclaims remembers, per object, the keys metawatch owned until another
// manager's Update (a hand edit: kubectl label --overwrite, kubectl edit) took
// them. A rule owns its keys: those are put back even though applying them now
// conflicts, while a key metawatch never owned is left to its owner.
//
// It is memory, not state: after a restart a hand-edited key is reported as a
// conflict instead of being put back. Entries live only until the next apply.
type reclaims struct {
	mu    sync.Mutex
	items map[types.NamespacedName]owned
}

func newReclaims() *reclaims { return &reclaims{items: map[types.NamespacedName]owned{}} }

func (r *reclaims) add(key types.NamespacedName, keys owned) {
	r.mu.Lock()
	defer r.mu.Unlock()
	prev, ok := r.items[key]
	if !ok {
		r.items[key] = keys
		return
	}
	r.items[key] = prev.Union(keys)
}

func (r *reclaims) get(key types.NamespacedName) owned {
	r.mu.Lock()
	defer r.mu.Unlock()
	o, ok := r.items[key]
	if !ok {
		return ownership.NewKeys()
	}
	return o
}

func (r *reclaims) clear(key types.NamespacedName) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.items, key)
}
