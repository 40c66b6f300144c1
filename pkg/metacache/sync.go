package metacache

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"

	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/healthz"

	"github.com/metawatch/metawatch/pkg/config"
	"github.com/metawatch/metawatch/pkg/telemetry"
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

// ObjectCounts counts the objects in one generation's informers. Only the live
// generation publishes them as metawatch_cached_objects{kind}: during a reload
// the old and the new generation both run, and must not overwrite each other.
type ObjectCounts struct {
	kinds map[string]*atomic.Int64
	live  atomic.Bool
}

// TrackCachedObjects counts each watch's objects from its informer's add and
// delete events. Call Publish to make the counts the metric's.
func TrackCachedObjects(ctx context.Context, c cache.Cache, watches []config.ResolvedWatch) (*ObjectCounts, error) {
	counts := &ObjectCounts{kinds: map[string]*atomic.Int64{}}
	for _, w := range watches {
		informer, err := c.GetInformer(ctx, NewObject(w.GVK), cache.BlockUntilSynced(false))
		if err != nil {
			return nil, fmt.Errorf("%s: getting informer for %s: %w", w.Path, w.GVK.Kind, err)
		}
		kind := w.GVK.GroupKind().String()
		n := &atomic.Int64{}
		counts.kinds[kind] = n
		_, err = informer.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
			AddFunc:    func(any) { counts.set(kind, n.Add(1)) },
			DeleteFunc: func(any) { counts.set(kind, n.Add(-1)) },
		})
		if err != nil {
			return nil, fmt.Errorf("%s: tracking cached %s: %w", w.Path, w.GVK.Kind, err)
		}
	}
	return counts, nil
}

func (o *ObjectCounts) set(kind string, n int64) {
	if o.live.Load() {
		telemetry.CachedObjects.WithLabelValues(kind).Set(float64(n))
	}
}

// Publish makes these counts metawatch_cached_objects, replacing any other generation's.
func (o *ObjectCounts) Publish() {
	telemetry.CachedObjects.Reset()
	o.live.Store(true)
	for kind, n := range o.kinds {
		telemetry.CachedObjects.WithLabelValues(kind).Set(float64(n.Load()))
	}
}

// Count is how many objects of kind (its GroupKind string) are cached; 0
// for a kind not watched.
func (o *ObjectCounts) Count(kind string) int {
	if n, ok := o.kinds[kind]; ok {
		return int(n.Load())
	}
	return 0
}

// Retire stops publishing these counts.
func (o *ObjectCounts) Retire() { o.live.Store(false) }
