package controller

import (
	"context"

	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

type queue = workqueue.TypedRateLimitingInterface[reconcile.Request]

// enqueueWithSnapshot enqueues the object of every event but creates of
// objects that need nothing (see RuleReconciler.settled; without rules, a new
// object needs nothing: the Reporter reports changes) or that wait for their
// Namespace (RuleReconciler.awaitsNamespace). On updates it
// remembers the labels and annotations the object had before, for the
// Reporter's diff, and tells ruler (if any) which keys another manager took.
func enqueueWithSnapshot(pending *pendingChanges, ruler *RuleReconciler) handler.EventHandler {
	return handler.Funcs{
		CreateFunc: func(ctx context.Context, e event.CreateEvent, q queue) {
			if ruler != nil && !ruler.awaitsNamespace(ctx, e.Object) && !ruler.settled(ctx, e.Object) {
				q.Add(requestFor(e.Object))
			}
		},
		DeleteFunc: func(_ context.Context, e event.DeleteEvent, q queue) { q.Add(requestFor(e.Object)) },
		UpdateFunc: func(_ context.Context, e event.UpdateEvent, q queue) {
			req := requestFor(e.ObjectNew)
			pending.remember(req.NamespacedName, snapshot{labels: e.ObjectOld.GetLabels(), annotations: e.ObjectOld.GetAnnotations()})
			if ruler != nil {
				ruler.noteTakenKeys(e.ObjectOld, e.ObjectNew)
			}
			q.Add(req)
		},
	}
}

func requestFor(obj client.Object) reconcile.Request {
	return reconcile.Request{NamespacedName: client.ObjectKeyFromObject(obj)}
}
