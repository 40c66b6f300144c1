package reports

import (
	"context"
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/runtime/schema"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	"github.com/metawatch/metawatch/pkg/metacache"
)

// NamespaceCounts counts the cached objects of some kinds per namespace
// ("" for cluster-scoped ones), from their informers' adds and deletes: the
// objects that pass are those counted less those with a finding.
type NamespaceCounts struct {
	mu     sync.Mutex
	counts map[string]int
}

// CountByNamespace counts the cached objects of gvks by namespace.
func CountByNamespace(ctx context.Context, c cache.Cache, gvks []schema.GroupVersionKind) (*NamespaceCounts, error) {
	n := &NamespaceCounts{counts: map[string]int{}}
	for _, gvk := range gvks {
		informer, err := c.GetInformer(ctx, metacache.NewObject(gvk), cache.BlockUntilSynced(false))
		if err != nil {
			return nil, fmt.Errorf("getting the informer of %s: %w", gvk.Kind, err)
		}
		if _, err := informer.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj any) { n.add(obj, 1) },
			DeleteFunc: func(obj any) { n.add(obj, -1) },
		}); err != nil {
			return nil, fmt.Errorf("counting the cached %s: %w", gvk.Kind, err)
		}
	}
	return n, nil
}

func (n *NamespaceCounts) add(obj any, delta int) {
	if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	o, ok := obj.(interface{ GetNamespace() string })
	if !ok {
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	ns := o.GetNamespace()
	if n.counts[ns] += delta; n.counts[ns] <= 0 {
		delete(n.counts, ns)
	}
}

// Each calls f with each namespace's count.
func (n *NamespaceCounts) Each(f func(namespace string, objects int)) {
	if n == nil {
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	for ns, c := range n.counts {
		f(ns, c)
	}
}
