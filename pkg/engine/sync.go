package engine

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/healthz"

	"github.com/metawatch/metawatch/pkg/config"
	"github.com/metawatch/metawatch/pkg/metrics"
)

// SyncedCheck is a readiness check that passes only once every watched kind's
// informer has synced, and names the kinds that have not.
func SyncedCheck(c cache.Cache, watches []config.ResolvedWatch) healthz.Checker {
	return func(req *http.Request) error {
		var pending []string
		for _, w := range watches {
			informer, err := c.GetInformer(req.Context(), NewObject(w.GVK), cache.BlockUntilSynced(false))
			if err != nil || !informer.HasSynced() {
				pending = append(pending, w.GVK.GroupKind().String())
			}
		}
		if len(pending) > 0 {
			return fmt.Errorf("not synced yet: %s", strings.Join(pending, ", "))
		}
		return nil
	}
}

// TrackCachedObjects keeps metawatch_cached_objects{kind} equal to the number of
// objects in each watch's informer, from its add and delete events.
func TrackCachedObjects(ctx context.Context, c cache.Cache, watches []config.ResolvedWatch) error {
	for _, w := range watches {
		informer, err := c.GetInformer(ctx, NewObject(w.GVK), cache.BlockUntilSynced(false))
		if err != nil {
			return fmt.Errorf("%s: getting informer for %s: %w", w.Path, w.GVK.Kind, err)
		}
		gauge := metrics.CachedObjects.WithLabelValues(w.GVK.GroupKind().String())
		gauge.Set(0)
		_, err = informer.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
			AddFunc:    func(any) { gauge.Inc() },
			DeleteFunc: func(any) { gauge.Dec() },
		})
		if err != nil {
			return fmt.Errorf("%s: tracking cached %s: %w", w.Path, w.GVK.Kind, err)
		}
	}
	return nil
}
