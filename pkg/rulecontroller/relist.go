package rulecontroller

import (
	"context"
	"sync"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/metawatch/metawatch/pkg/metacache"
)

// Relists says whether a kind's informer is in a relist, and calls back when
// one ends (metacache.Relists). During a relist the streaming informer's
// store mixes objects the list brought with objects it has yet to bring or
// sweep, so removals and releases of that kind, which must not be decided
// from a half-built view, wait for its end; sets and copies do not.
type Relists interface {
	Relisting(schema.GroupKind) bool
	OnRelisted(schema.GroupKind, func())
}

// relistHolds are the objects whose removals and releases a relist held:
// they are queued again when it ends (nothing else would: their watch
// considers them settled).
type relistHolds struct {
	mu   sync.Mutex
	keys sets.Set[types.NamespacedName]
}

func newRelistHolds() *relistHolds {
	return &relistHolds{keys: sets.New[types.NamespacedName]()}
}

// heldByRelist reports whether the kind relists, and then remembers key.
// The key is remembered before the question is asked: a relist that ends
// in between either finds it (and queues it) or has already said it ended.
func (r *ruleReconciler) heldByRelist(key types.NamespacedName) bool {
	if r.wiring.Relists == nil {
		return false
	}
	h := r.relistHeld
	h.mu.Lock()
	h.keys.Insert(key)
	h.mu.Unlock()
	if r.wiring.Relists.Relisting(r.GVK.GroupKind()) {
		return true
	}
	h.mu.Lock()
	h.keys.Delete(key)
	h.mu.Unlock()
	return false
}

func (h *relistHolds) take() []types.NamespacedName {
	h.mu.Lock()
	defer h.mu.Unlock()
	keys := h.keys.UnsortedList()
	h.keys = sets.New[types.NamespacedName]()
	return keys
}

// requeueAfterRelists queues the objects of kind gvk a relist held once it
// ends, as requeueApproved does for the brake's approval.
func requeueAfterRelists(mgr manager.Manager, c controller.Controller, gvk schema.GroupVersionKind, relists Relists, held *relistHolds) error {
	events := make(chan event.GenericEvent)
	if err := c.Watch(source.Channel(events, &handler.EnqueueRequestForObject{})); err != nil {
		return err
	}
	stopped := make(chan struct{})
	relists.OnRelisted(gvk.GroupKind(), func() {
		keys := held.take()
		go func() { // the informer's goroutine must not wait for the queue
			for _, key := range keys {
				obj := metacache.NewObject(gvk)
				obj.Namespace, obj.Name = key.Namespace, key.Name
				select {
				case events <- event.GenericEvent{Object: obj}:
				case <-stopped:
					return
				}
			}
		}()
	})
	return mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		<-ctx.Done()
		close(stopped)
		return nil
	}))
}
