package controller

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/metawatch/metawatch/pkg/metacache"
	"github.com/metawatch/metawatch/pkg/rules"
)

// settled tells, for a create event (the initial list, or a new object),
// whether the object already is as its rules want: nothing to write, remove or
// report. Such objects are not queued. On a converged cluster that is almost
// every object of the initial list, and a queue that held them all at once
// keeps the memory of that high-water mark for the life of the process (Go
// maps do not shrink): ~180 B per object in controller-runtime's queue and its
// metrics, a third of what the cache itself costs per pod.
//
// It evaluates the rules as the reconcile would; anything it cannot tell
// (the namespace cannot be read, or is not cached yet) says "not settled".
// Objects of a kind whose writes are frozen are settled: nothing may be done
// to them, and the generation that lifts the freeze evaluates them all.
func (r *RuleReconciler) settled(ctx context.Context, o client.Object) bool {
	obj, ok := o.(*metav1.PartialObjectMetadata)
	if !ok {
		return false
	}
	if !r.writable(obj) || r.frozen() != nil {
		return true // nothing metawatch may do to it
	}
	ns, cached, err := r.namespaceOf(ctx, obj)
	if err != nil || !cached {
		return false
	}
	result := rules.Evaluate(r.Rules, rules.Metadata{Labels: obj.Labels, Annotations: obj.Annotations}, ns)
	return len(result.Violations) == 0 &&
		len(present(obj.Labels, result.RemoveLabels, sets.New[string]()))+len(present(obj.Annotations, result.RemoveAnnotations, sets.New[string]())) == 0 &&
		changeOf(obj, result).empty()
}

// awaitsNamespace tells, for a create event, whether the object's Namespace
// is not cached yet (a generation's Namespaces and objects are listed by
// separate informers, in no set order): the object then waits, unqueued, and
// the Namespace's arrival judges it (reevaluate), so that a converged
// cluster's objects are never queued whatever order the informers sync in.
func (r *RuleReconciler) awaitsNamespace(ctx context.Context, o client.Object) bool {
	obj, ok := o.(*metav1.PartialObjectMetadata)
	if !ok || !r.writable(obj) || r.frozen() != nil {
		return false
	}
	if _, cached, err := r.namespaceOf(ctx, obj); cached || err != nil {
		return false
	}
	return r.waiting.waitUnlessCached(client.ObjectKeyFromObject(obj), func() bool {
		_, cached, err := r.namespaceOf(ctx, obj)
		return cached || err != nil
	})
}

// reevaluate is called for each object that waited for its Namespace, once
// that is cached: it is queued unless it is settled.
func (r *RuleReconciler) reevaluate(ctx context.Context, key client.ObjectKey) bool {
	obj := metacache.NewObject(r.GVK)
	if err := r.Reader.Get(ctx, key, obj, client.UnsafeDisableDeepCopy); err != nil {
		return !apierrors.IsNotFound(err) // gone: nothing to do; unreadable: let the reconcile tell
	}
	return !r.settled(ctx, obj)
}
