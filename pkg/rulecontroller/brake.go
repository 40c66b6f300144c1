package rulecontroller

import (
	"context"
	"maps"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/metawatch/metawatch/pkg/brake"
	"github.com/metawatch/metawatch/pkg/metacache"
	"github.com/metawatch/metawatch/pkg/rules"
)

// braked is res, unless the removal brake holds obj's removals and releases
// (package brake), or a relist of its kind does (relist.go): then the keys
// rules remove are left out of the removal and the keys metawatch would
// release are kept at their current value (Owned.Keep, as the guardrails
// keep keys), so the object is left as it is but for its sets and copies,
// which neither ever holds.
func (r *ruleReconciler) braked(ctx context.Context, key types.NamespacedName, obj *metav1.PartialObjectMetadata, mine owned, res rules.Result) rules.Result {
	if r.wiring.Brake == nil && r.wiring.Relists == nil {
		return res
	}
	kind := kindLabel(r.GVK)
	c := changeOf(obj, mine, res)
	removeLabels := present(obj.Labels, res.RemoveLabels, sets.New[string]())
	removeAnnotations := present(obj.Annotations, res.RemoveAnnotations, sets.New[string]())
	releaseLabels := presentOf(obj.Labels, c.releaseLabels)
	releaseAnnotations := presentOf(obj.Annotations, c.releaseAnnotations)
	if len(removeLabels)+len(removeAnnotations)+len(releaseLabels)+len(releaseAnnotations) == 0 {
		r.wiring.Brake.Forget(kind, key)
		return res
	}
	// A relist of the kind holds them without counting them (relist.go).
	holder := "a relist of the kind"
	if !r.heldByRelist(key) {
		if r.wiring.Brake.Admit(ctx, kind, key, brakeKeys(removeLabels, removeAnnotations, releaseLabels, releaseAnnotations), r.cachedObjects()) {
			return res
		}
		holder = "the removal brake"
	}
	logr.FromContextOrDiscard(ctx).V(1).Info("removals held by "+holder, "remove", append(removeLabels, removeAnnotations...),
		"release", append(releaseLabels, releaseAnnotations...))
	res.RemoveLabels, res.RemoveAnnotations = nil, nil
	res.Labels = kept(res.Labels, obj.Labels, releaseLabels)
	res.Annotations = kept(res.Annotations, obj.Annotations, releaseAnnotations)
	return res
}

// brakeKeys names the keys a removal takes off an object, for the brake to
// tell a retry of it from a removal of other keys (a Namespace relabelled
// after an approved change is a new change on the same objects).
func brakeKeys(removeLabels, removeAnnotations, releaseLabels, releaseAnnotations []string) []string {
	out := make([]string, 0, len(removeLabels)+len(removeAnnotations)+len(releaseLabels)+len(releaseAnnotations))
	for _, k := range append(removeLabels, releaseLabels...) {
		out = append(out, "label "+k)
	}
	for _, k := range append(removeAnnotations, releaseAnnotations...) {
		out = append(out, "annotation "+k)
	}
	return out
}

// cachedObjects is how many objects of the kind the cache holds (the bound's share).
func (r *ruleReconciler) cachedObjects() int {
	if r.wiring.CachedObjects == nil {
		return 0
	}
	return r.wiring.CachedObjects(kindLabel(r.GVK))
}

// presentOf are the keys that current has: a key metawatch owns but that
// is not on the object is no removal to hold.
func presentOf(current map[string]string, keys []string) []string {
	var out []string
	for _, k := range keys {
		if _, ok := current[k]; ok {
			out = append(out, k)
		}
	}
	return out
}

// kept is desired plus keys at their current value, kept (not released).
func kept(desired map[string]rules.Owned, current map[string]string, keys []string) map[string]rules.Owned {
	if len(keys) == 0 {
		return desired
	}
	out := maps.Clone(desired)
	if out == nil {
		out = map[string]rules.Owned{}
	}
	for _, k := range keys {
		out[k] = rules.Owned{Value: current[k], Keep: true}
	}
	return out
}

// requeueApproved queues the objects of kind gvk the brake held once their
// configuration is approved: nothing else would, as held objects are
// settled as far as their watch is concerned.
func requeueApproved(mgr manager.Manager, c controller.Controller, gvk schema.GroupVersionKind, b *brake.Brake) error {
	events := make(chan event.GenericEvent)
	if err := c.Watch(source.Channel(events, &handler.EnqueueRequestForObject{})); err != nil {
		return err
	}
	stopped := make(chan struct{})
	// Registered now, not once the runnable starts: the approval may come
	// as the generation starts; the sends wait for the controller's sources.
	b.OnApproved(kindLabel(gvk), func(keys []types.NamespacedName) {
		go func() {
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
