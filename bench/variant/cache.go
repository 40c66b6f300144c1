package variant

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// startCounted counts the events of c's informers of objs (the pods' first)
// and returns the variant, started by start (the manager's or the cache's)
// when it is Run.
func startCounted(ctx context.Context, c cache.Cache, start func(context.Context) error, counters *Counters, objs ...client.Object) (*Running, error) {
	var pods toolscache.Store
	for i, obj := range objs {
		informer, err := c.GetInformer(ctx, obj, cache.BlockUntilSynced(false))
		if err != nil {
			return nil, err
		}
		if _, err := informer.AddEventHandler(countEvents(counters)); err != nil {
			return nil, err
		}
		if i == 0 {
			if pods, err = storeOf(informer); err != nil {
				return nil, err
			}
		}
	}
	return &Running{
		Run:           func() { go func() { _ = start(ctx) }() },
		WaitSynced:    func(ctx context.Context) error { return waitSynced(ctx, c) },
		CachedPods:    func(context.Context) (int, error) { return len(pods.ListKeys()), nil },
		CachedPodUIDs: func(context.Context) ([]string, error) { return storedUIDs(pods) },
	}, nil
}

// storeOf is the informer's store: the cache's objects as stored, counted
// without a copy each (a cache read copies a packed object, and the list of
// every pod would be in the figures it is counted for).
func storeOf(informer cache.Informer) (toolscache.Store, error) {
	s, ok := informer.(interface{ GetStore() toolscache.Store })
	if !ok {
		return nil, fmt.Errorf("the cache's informer (%T) has no store to count", informer)
	}
	return s.GetStore(), nil
}

// storedUIDs are the uids of the objects in store.
func storedUIDs(store toolscache.Store) ([]string, error) {
	var uids []string
	for _, item := range store.List() {
		m, err := meta.Accessor(item)
		if err != nil {
			return nil, err
		}
		uids = append(uids, string(m.GetUID()))
	}
	return uids, nil
}

// startCache is a cache-only variant: a controller-runtime cache with o, of
// the pods spec selects (server side), counted by startCounted.
func startCache(ctx context.Context, cfg *rest.Config, spec Spec, counters *Counters, o cache.Options, pod client.Object) (*Running, error) {
	c, err := newCache(cfg, spec, o)
	if err != nil {
		return nil, err
	}
	return startCounted(ctx, c, c.Start, counters, pod)
}

// newCache is a controller-runtime cache with o, of the pods spec selects (server side).
func newCache(cfg *rest.Config, spec Spec, o cache.Options) (cache.Cache, error) {
	selector, err := labels.Parse(spec.Selector)
	if err != nil {
		return nil, err
	}
	o.DefaultLabelSelector = selector
	return cache.New(cfg, o)
}

func waitSynced(ctx context.Context, c cache.Cache) error {
	if !c.WaitForCacheSync(ctx) {
		return fmt.Errorf("cache did not sync: %w", context.Cause(ctx))
	}
	return nil
}

func metaEach(list client.ObjectList, f func(metav1.Object)) error {
	return meta.EachListItem(list, func(obj runtime.Object) error {
		m, err := meta.Accessor(obj)
		if err == nil {
			f(m)
		}
		return err
	})
}
