package controller

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
)

// namespaceWaiters holds the objects whose Namespace was not in the cache when
// they were created or reconciled: a Namespace and its objects applied together, or a
// Namespace watch that lags (a relist), can deliver an object first. Such an
// object is neither written nor judged settled: "no Namespace" is not "a
// Namespace without the key", and reading it so would release every copied
// key. The Namespace's create event judges its waiters and queues those that
// are not settled (ruleReconciler.reevaluate).
type namespaceWaiters struct {
	mu    sync.Mutex
	items map[string]sets.Set[types.NamespacedName] // namespace -> objects in it
}

func newNamespaceWaiters() *namespaceWaiters {
	return &namespaceWaiters{items: map[string]sets.Set[types.NamespacedName]{}}
}

// waitUnlessCached adds obj to the waiters of its namespace unless cached()
// now finds the namespace; it reports whether obj waits. cached runs under
// the lock: a create event that has already taken the waiters has also
// already put the Namespace in the cache, so either cached finds it or the
// event finds obj.
func (w *namespaceWaiters) waitUnlessCached(obj types.NamespacedName, cached func() bool) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if cached() {
		return false
	}
	if w.items[obj.Namespace] == nil {
		w.items[obj.Namespace] = sets.New[types.NamespacedName]()
	}
	w.items[obj.Namespace].Insert(obj)
	return true
}

// take returns and forgets the objects waiting for namespace.
func (w *namespaceWaiters) take(namespace string) []types.NamespacedName {
	w.mu.Lock()
	defer w.mu.Unlock()
	objs := w.items[namespace]
	delete(w.items, namespace)
	return objs.UnsortedList()
}

// forget drops a deleted object.
func (w *namespaceWaiters) forget(obj types.NamespacedName) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if objs := w.items[obj.Namespace]; objs != nil {
		objs.Delete(obj)
		if objs.Len() == 0 {
			delete(w.items, obj.Namespace)
		}
	}
}
