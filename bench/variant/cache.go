package variant

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// startCounted counts the events of c's informers of objs and returns the
// variant, started by start (the manager's or the cache's) when it is Run.
func startCounted(ctx context.Context, c cache.Cache, start func(context.Context) error, counters *Counters,
	podList func() client.ObjectList, objs ...client.Object) (*Running, error) {
	for _, obj := range objs {
		informer, err := c.GetInformer(ctx, obj, cache.BlockUntilSynced(false))
		if err != nil {
			return nil, err
		}
		if _, err := informer.AddEventHandler(countEvents(counters)); err != nil {
			return nil, err
		}
	}
	return &Running{
		Run:        func() { go func() { _ = start(ctx) }() },
		WaitSynced: func(ctx context.Context) error { return waitSynced(ctx, c) },
		CachedPods: func(ctx context.Context) (int, error) {
			return countCached(ctx, c, podList(), client.UnsafeDisableDeepCopy)
		},
		CachedPodUIDs: func(ctx context.Context) ([]string, error) { return cachedUIDs(ctx, c, podList()) },
	}, nil
}

// startCache is a cache-only variant: a controller-runtime cache with o, of
// the pods spec selects (server side), counted by startCounted.
func startCache(ctx context.Context, cfg *rest.Config, spec Spec, counters *Counters, o cache.Options,
	podList func() client.ObjectList, pod client.Object) (*Running, error) {
	c, err := newCache(cfg, spec, o)
	if err != nil {
		return nil, err
	}
	return startCounted(ctx, c, c.Start, counters, podList, pod)
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

// cachedUIDs lists the uids in the cache, without copies.
func cachedUIDs(ctx context.Context, c cache.Cache, list client.ObjectList) ([]string, error) {
	if err := c.List(ctx, list, client.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	var uids []string
	err := metaEach(list, func(m metav1.Object) { uids = append(uids, string(m.GetUID())) })
	return uids, err
}

func waitSynced(ctx context.Context, c cache.Cache) error {
	if !c.WaitForCacheSync(ctx) {
		return fmt.Errorf("cache did not sync: %w", context.Cause(ctx))
	}
	return nil
}

// countCached lists the cache with opts (without copies, as the variants
// but step7 count) and counts what it got.
func countCached(ctx context.Context, c cache.Cache, list client.ObjectList, opts ...client.ListOption) (int, error) {
	if err := c.List(ctx, list, opts...); err != nil {
		return 0, err
	}
	return meta.LenList(list), nil
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
