package variant

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

func waitSynced(ctx context.Context, c cache.Cache) error {
	if !c.WaitForCacheSync(ctx) {
		return fmt.Errorf("cache did not sync: %w", context.Cause(ctx))
	}
	return nil
}

// countCached lists the cache without copies.
func countCached(ctx context.Context, c cache.Cache, list client.ObjectList) (int, error) {
	if err := c.List(ctx, list, client.UnsafeDisableDeepCopy); err != nil {
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
