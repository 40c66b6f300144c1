package rulecontroller

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"
)

// snapshot is an object's labels and annotations before its first unreported change.
type snapshot struct {
	labels, annotations map[string]string
}

// snapshots holds a snapshot per object from its first unreported update
// until the reconciler takes it, so the reconciler can diff against the cache.
type snapshots struct {
	mu    sync.Mutex
	items map[types.NamespacedName]snapshot
}

func newSnapshots() *snapshots {
	return &snapshots{items: map[types.NamespacedName]snapshot{}}
}

// remember keeps s unless an older snapshot of key is still unreported.
func (p *snapshots) remember(key types.NamespacedName, s snapshot) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.items[key]; !ok {
		p.items[key] = s
	}
}

// take returns and forgets key's snapshot.
func (p *snapshots) take(key types.NamespacedName) (snapshot, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	s, ok := p.items[key]
	delete(p.items, key)
	return s, ok
}
