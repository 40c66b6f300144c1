package metacache

import (
	"sync"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/metawatch/metawatch/pkg/informer"
)

// Relists knows a cache's streaming informers by kind, and says whether a
// kind relists: while it does its store mixes what the list brought with
// what it has yet to bring or sweep, so what must not be decided from a
// half-built view (the rule controllers' removals and releases) waits for
// the relist's end. A kind watched in several namespaces has an informer
// each. Its methods are safe on nil (no kind ever relists).
type Relists struct {
	mu        sync.Mutex
	informers map[schema.GroupKind][]*informer.Informer
	listeners map[schema.GroupKind][]func()
}

// NewRelists is an empty Relists, for one cache (CacheOptions' Options.Relists).
func NewRelists() *Relists {
	return &Relists{informers: map[schema.GroupKind][]*informer.Informer{}, listeners: map[schema.GroupKind][]func(){}}
}

// Relisting reports whether an informer of kind is in a relist (after its
// first sync).
func (r *Relists) Relisting(kind schema.GroupKind) bool {
	if r == nil {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, inf := range r.informers[kind] {
		if inf.Relisting() {
			return true
		}
	}
	return false
}

// OnRelisted calls fn each time a relist of kind ends, on the informer's
// goroutine (fn must return quickly).
func (r *Relists) OnRelisted(kind schema.GroupKind, fn func()) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.listeners[kind] = append(r.listeners[kind], fn)
}

func (r *Relists) add(kind schema.GroupKind, inf *informer.Informer) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.informers[kind] = append(r.informers[kind], inf)
	inf.OnRelisted(func() { r.relisted(kind) })
}

func (r *Relists) relisted(kind schema.GroupKind) {
	r.mu.Lock()
	fns := append([]func(){}, r.listeners[kind]...)
	r.mu.Unlock()
	for _, fn := range fns {
		fn()
	}
}
