package informer

import (
	"sync/atomic"

	toolscache "k8s.io/client-go/tools/cache"
)

// Store is the informer's indexer. The informer updates it object by object,
// never with Replace, and it says the resourceVersion of the last event the
// informer processed, bookmarks included, whatever client-go's feature gates
// say (its own indexer says it only with AtomicFIFO on).
type Store struct {
	toolscache.Indexer
	rv atomic.Pointer[string]
}

func newStore(indexers toolscache.Indexers) *Store {
	return &Store{Indexer: toolscache.NewIndexer(toolscache.DeletionHandlingMetaNamespaceKeyFunc, indexers)}
}

// LastStoreSyncResourceVersion is the resourceVersion of the last event the
// informer processed: an object's, a bookmark's, or a list's at its end.
func (s *Store) LastStoreSyncResourceVersion() string {
	if p := s.rv.Load(); p != nil {
		return *p
	}
	return ""
}

// Bookmark records rv as the last one processed.
func (s *Store) Bookmark(rv string) { s.rv.Store(&rv) }

// TracksLastResourceVersion tells package sharding that
// LastStoreSyncResourceVersion follows what the informer processed (see
// sharding's storeAt).
func (s *Store) TracksLastResourceVersion() bool { return true }

// eachKey calls fn with every stored key, a namespace at a time when the
// store has a namespace index (controller-runtime's informers do), so that
// no slice of every key is made; else from one list of the keys.
func (s *Store) eachKey(fn func(key string)) {
	if _, ok := s.GetIndexers()[toolscache.NamespaceIndex]; !ok {
		for _, key := range s.ListKeys() {
			fn(key)
		}
		return
	}
	for _, ns := range s.ListIndexFuncValues(toolscache.NamespaceIndex) {
		keys, err := s.IndexKeys(toolscache.NamespaceIndex, ns)
		if err != nil {
			continue
		}
		for _, key := range keys {
			fn(key)
		}
	}
}

// Marked is a stored object that keeps the mark of the list attempt that
// last brought it, so that a list needs no set of the keys it saw.
// pkg/metacache's packed objects implement it with an atomic field; the
// informer sets it on a new object before storing it, and may set it again
// on a stored one (the only change ever made to a stored object).
type Marked interface {
	ListEpoch() uint32
	SetListEpoch(uint32)
}

// marks knows which list attempt last brought each stored object. Epochs
// count list attempts from 1; 0 is "no list": objects stored from watch
// events are never marked. A uint32 wraps after four billion attempts.
type marks struct {
	// epoch is the attempt under way, first the first attempt of the list
	// it belongs to (a list is tried again until an attempt ends).
	epoch, first uint32
	// keys marks the objects that are not Marked, for the list under way.
	keys map[string]uint32
}

// begin starts a list attempt: a new list, or another try of the one under way.
func (m *marks) begin(newList bool) {
	m.epoch++
	if m.epoch == 0 {
		m.epoch++
	}
	if newList {
		m.first = m.epoch
		m.keys = nil
	}
}

// end forgets the list: its marks of objects that are not Marked go.
func (m *marks) end() { m.keys, m.first = nil, m.epoch }

func (m *marks) mark(obj any, key string) {
	if o, ok := obj.(Marked); ok {
		o.SetListEpoch(m.epoch)
		return
	}
	if m.keys == nil {
		m.keys = map[string]uint32{}
	}
	m.keys[key] = m.epoch
}

func (m *marks) of(obj any, key string) uint32 {
	if o, ok := obj.(Marked); ok {
		return o.ListEpoch()
	}
	return m.keys[key]
}

// brought reports whether the attempt under way brought the stored obj.
func (m *marks) brought(obj any, key string) bool { return m.of(obj, key) == m.epoch }

// broughtBefore reports whether an earlier attempt of the list under way
// brought the stored obj.
func (m *marks) broughtBefore(obj any, key string) bool {
	e := m.of(obj, key)
	return e != 0 && e >= m.first && e < m.epoch
}
