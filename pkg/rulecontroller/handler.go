package rulecontroller

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/metawatch/metawatch/pkg/metacache"
	"github.com/metawatch/metawatch/pkg/rules"
)

type queue = workqueue.TypedRateLimitingInterface[reconcile.Request]

// enqueueWithSnapshot enqueues the object of every event but creates of
// objects that need nothing (see ruleReconciler.settled; without rules, a new
// object needs nothing: the reporter reports changes) or that wait for a
// source (ruleReconciler.needsReconcile). On updates it
// remembers the labels and annotations the object had before, for the
// reporter's diff, and tells ruler (if any) which keys another manager took.
func enqueueWithSnapshot(mem *memory, ruler *ruleReconciler) handler.EventHandler {
	return handler.Funcs{
		CreateFunc: func(ctx context.Context, e event.CreateEvent, q queue) {
			switch {
			case ruler == nil || !ruler.needsReconcile(ctx, e.Object):
			case e.IsInInitialList:
				addFanout(q, requestFor(e.Object)) // below the objects created from now on
			default:
				q.Add(requestFor(e.Object))
			}
		},
		DeleteFunc: func(_ context.Context, e event.DeleteEvent, q queue) { q.Add(requestFor(e.Object)) },
		UpdateFunc: func(_ context.Context, e event.UpdateEvent, q queue) {
			req := requestFor(e.ObjectNew)
			mem.snapshots.remember(req.NamespacedName, snapshot{labels: e.ObjectOld.GetLabels(), annotations: e.ObjectOld.GetAnnotations()})
			if ruler != nil {
				ruler.noteTakenKeys(e.ObjectOld, e.ObjectNew)
				ruler.noteUndone(e.ObjectOld, e.ObjectNew)
				ruler.noteForeignApply(e.ObjectOld, e.ObjectNew)
			}
			q.Add(req)
		},
	}
}

func requestFor(obj client.Object) reconcile.Request {
	return reconcile.Request{NamespacedName: client.ObjectKeyFromObject(obj)}
}

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
func (r *ruleReconciler) settled(ctx context.Context, o client.Object) bool {
	obj, ok := metacache.View(o)
	if !ok {
		return false
	}
	if r.frozen() != nil {
		return true // nothing metawatch may do to it
	}
	if !r.writable(obj) {
		return !r.ownsKeys(obj) // queued only to count them as left
	}
	src, missing, err := r.sourcesOf(ctx, obj)
	if err != nil || missing != "" {
		return false
	}
	return r.settledWith(obj, src)
}

// settledWith is settled, with obj's sources read.
func (r *ruleReconciler) settledWith(obj *metav1.PartialObjectMetadata, src rules.Sources) bool {
	result := rules.Evaluate(r.Rules, rules.Metadata{Labels: obj.Labels, Annotations: obj.Annotations}, src)
	if len(result.Violations) > 0 {
		return false
	}
	// An object with keys the guardrails leave is queued too, to be counted.
	if !r.kindWritable {
		return !r.ownsKeys(obj)
	}
	if _, adopts := r.planAdoption(obj); adopts {
		return false
	}
	mine := r.mine(obj)
	result, left := r.guarded(obj, mine, result)
	return len(left) == 0 &&
		len(present(obj.Labels, result.RemoveLabels, sets.New[string]()))+len(present(obj.Annotations, result.RemoveAnnotations, sets.New[string]())) == 0 &&
		changeOf(obj, mine, result).empty()
}

// needsReconcile tells, for a create event, whether the object is queued:
// not when nothing may be done to it, nor when it is settled, nor when its
// Namespace or an owner on its chain is not cached yet (a generation's
// Namespaces, owners and objects are listed by separate informers, in no set
// order): it then waits, unqueued, and the source's arrival judges it
// (reevaluate), so that a converged cluster's objects are never queued
// whatever order the informers sync in. The sources are read once for both.
func (r *ruleReconciler) needsReconcile(ctx context.Context, o client.Object) bool {
	obj, ok := metacache.View(o)
	if !ok {
		return true
	}
	switch {
	case r.frozen() != nil:
		return false // nothing metawatch may do to it
	case !r.writable(obj):
		return r.ownsKeys(obj) // nothing may be written; its keys are counted as left
	}
	src, waits, err := r.awaitSources(ctx, client.ObjectKeyFromObject(obj), obj)
	switch {
	case err != nil:
		return true // the reconcile tells
	case waits:
		return false
	}
	return !r.settledWith(obj, src)
}

// wake queues the objects that waited for source, now cached, unless they
// are settled, at fanoutPriority.
func (r *ruleReconciler) wake(ctx context.Context, source string, q queue) {
	for _, key := range r.memory.waiting.take(source) {
		if r.reevaluate(ctx, key) {
			addFanout(q, reconcile.Request{NamespacedName: key})
		}
	}
}

// reevaluate is called for each object that waited for a source, once that
// is cached: it is queued unless it is settled.
func (r *ruleReconciler) reevaluate(ctx context.Context, key client.ObjectKey) bool {
	obj := metacache.NewObject(r.GVK)
	if err := r.Reader.Get(ctx, key, obj, getOptions(r.noCopy())...); err != nil {
		return !apierrors.IsNotFound(err) // gone: nothing to do; unreadable: let the reconcile tell
	}
	return !r.settled(ctx, obj)
}
