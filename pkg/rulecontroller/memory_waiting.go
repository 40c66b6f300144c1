package rulecontroller

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
)

// waiters holds the objects one of whose copy sources was not in the cache
// when they were created or reconciled: their Namespace, or an owner on
// their chain of controlling owners. A Namespace and its objects applied
// together, a ReplicaSet and the pods it creates at once, or a watch that
// lags (a relist), can deliver an object first. Such an object is neither
// written nor judged settled: "no Namespace" is not "a Namespace without the
// key", and reading it so would release every copied key. The source's create
// event judges its waiters and queues those that are not settled
// (ruleReconciler.reevaluate).
type waiters struct {
	mu    sync.Mutex
	items map[string]sets.Set[types.NamespacedName] // source -> objects waiting for it
	on    map[types.NamespacedName]string           // object -> the source it waits for
}

// The keys of the sources objects wait for.
func namespaceSource(name string) string { return "namespace/" + name }
func ownerSource(uid types.UID) string   { return "owner/" + string(uid) }

func newWaiters() *waiters {
	return &waiters{items: map[string]sets.Set[types.NamespacedName]{}, on: map[types.NamespacedName]string{}}
}

// waitUnless adds obj to the waiters of source unless arrived() says it is
// here now; it reports whether obj waits. arrived runs under the lock: a
// create event that has already taken the waiters has also already put the
// source in the cache, so either arrived finds it or the event finds obj.
func (w *waiters) waitUnless(source string, obj types.NamespacedName, arrived func() bool) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if arrived() {
		return false
	}
	w.dropLocked(obj) // it waits for one source at a time: the one missing now
	if w.items[source] == nil {
		w.items[source] = sets.New[types.NamespacedName]()
	}
	w.items[source].Insert(obj)
	w.on[obj] = source
	return true
}

// take returns and forgets the objects waiting for source.
func (w *waiters) take(source string) []types.NamespacedName {
	w.mu.Lock()
	defer w.mu.Unlock()
	objs := w.items[source]
	delete(w.items, source)
	for obj := range objs {
		delete(w.on, obj)
	}
	return objs.UnsortedList()
}

// forget drops a deleted object.
func (w *waiters) forget(obj types.NamespacedName) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.dropLocked(obj)
}

func (w *waiters) dropLocked(obj types.NamespacedName) {
	source, ok := w.on[obj]
	if !ok {
		return
	}
	delete(w.on, obj)
	if objs := w.items[source]; objs != nil {
		objs.Delete(obj)
		if objs.Len() == 0 {
			delete(w.items, source)
		}
	}
}
