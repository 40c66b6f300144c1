package informer

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	toolscache "k8s.io/client-go/tools/cache"
)

// What the loop does with each object: transform it, store it, tell the
// handlers. Each step holds emit, so that a handler added meanwhile gets
// either the object in its initial adds or the notification, never both.

// transformed is obj through the transform, and its store key.
func (i *Informer) transformed(obj any) (any, string, error) {
	if i.transform != nil {
		var err error
		if obj, err = i.transform(obj); err != nil {
			return nil, "", fmt.Errorf("transforming: %w", err)
		}
	}
	key, err := toolscache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		return nil, "", toolscache.KeyError{Obj: obj, Err: err}
	}
	return obj, key, nil
}

// listed stores an object the list attempt under way brought, marked with
// its epoch. One an earlier attempt of the same list already brought at the
// same resourceVersion is only marked again: its handlers heard of it then.
func (i *Informer) listed(obj any) error {
	obj, key, err := i.transformed(obj)
	if err != nil {
		return err
	}
	rv := resourceVersionOf(obj)
	i.emit.Lock()
	defer i.emit.Unlock()
	old, exists, _ := i.store.GetByKey(key)
	if exists && i.marks.broughtBefore(old, key) && resourceVersionOf(old) == rv {
		i.marks.mark(old, key)
		return nil
	}
	i.marks.mark(obj, key)
	i.put(key, obj, old, exists, !i.HasSynced())
	return nil
}

// upsert stores an object a watch event added or modified.
func (i *Informer) upsert(obj any) error {
	obj, key, err := i.transformed(obj)
	if err != nil {
		return err
	}
	i.emit.Lock()
	defer i.emit.Unlock()
	old, exists, _ := i.store.GetByKey(key)
	i.put(key, obj, old, exists, false)
	return nil
}

// put stores obj, an update of old if it exists, and tells the handlers.
func (i *Informer) put(key string, obj, old any, exists, initial bool) {
	if err := i.store.Update(obj); err != nil {
		panic(fmt.Sprintf("informer: storing %s: %v", key, err)) // the key was made by the same function
	}
	i.store.Bookmark(resourceVersionOf(obj))
	if exists {
		i.notify(notification{kind: updated, old: old, obj: obj})
		return
	}
	i.notify(notification{kind: added, obj: obj, initial: initial})
}

// remove deletes an object a watch event deleted, and tells the handlers,
// whether or not it was stored (as client-go's informer does).
func (i *Informer) remove(obj any) error {
	obj, _, err := i.transformed(obj)
	if err != nil {
		return err
	}
	i.emit.Lock()
	defer i.emit.Unlock()
	if err := i.store.Delete(obj); err != nil {
		return err
	}
	i.store.Bookmark(resourceVersionOf(obj))
	i.notify(notification{kind: deleted, obj: obj})
	return nil
}

// bookmark records rv as processed.
func (i *Informer) bookmark(rv string) {
	i.emit.Lock()
	defer i.emit.Unlock()
	i.store.Bookmark(rv)
}

// sweep ends the list attempt under way, which brought its objects at rv:
// every stored object it did not bring is deleted, and the handlers get a
// DeletedFinalStateUnknown of it. The first list's end syncs the informer;
// a later one's ends the relist.
func (i *Informer) sweep(rv string) int {
	swept := 0
	i.store.eachKey(func(key string) {
		i.emit.Lock()
		defer i.emit.Unlock()
		obj, ok, _ := i.store.GetByKey(key)
		if !ok || i.marks.brought(obj, key) {
			return
		}
		if err := i.store.Delete(obj); err != nil {
			return
		}
		swept++
		i.notify(notification{kind: deleted, obj: toolscache.DeletedFinalStateUnknown{Key: key, Obj: obj}})
	})
	i.emit.Lock()
	i.marks.end()
	i.store.Bookmark(rv)
	first := !i.HasSynced()
	if first {
		close(i.synced)
		i.notify(notification{kind: syncedMark})
	}
	i.emit.Unlock()
	i.setLastRV(rv)
	if !first && i.relisting.Swap(false) {
		i.tellRelisted()
	}
	return swept
}

// beginList starts a list attempt: a new list, or another try of the one
// under way. A new list after the first sync is a relist.
func (i *Informer) beginList(newList bool) {
	i.emit.Lock()
	defer i.emit.Unlock()
	i.marks.begin(newList)
	if i.HasSynced() {
		i.relisting.Store(true)
	}
}

// resyncEvery hands the handlers whose resync period has come an update of
// every stored object to itself, every check period, until ctx ends.
func (i *Informer) resyncEvery(ctx context.Context, check time.Duration) {
	ticker := time.NewTicker(check)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-ticker.C:
			i.resync(now)
		}
	}
}

func (i *Informer) resync(now time.Time) {
	i.emit.Lock()
	defer i.emit.Unlock()
	var due []*registration
	for _, r := range i.handlers {
		if r.resyncPeriod > 0 && !now.Before(r.nextResync) {
			due = append(due, r)
			r.nextResync = now.Add(r.resyncPeriod)
		}
	}
	if len(due) == 0 {
		return
	}
	i.store.eachKey(func(key string) {
		if obj, ok, _ := i.store.GetByKey(key); ok {
			for _, r := range due {
				i.push(r, notification{kind: updated, old: obj, obj: obj})
			}
		}
	})
}

func resourceVersionOf(obj any) string {
	m, err := meta.Accessor(obj)
	if err != nil {
		return ""
	}
	return m.GetResourceVersion()
}
