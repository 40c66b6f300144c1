package controller

import (
	"context"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/metawatch/metawatch/pkg/engine"
)

// Reporter is the first reconciler: it logs, for each object of one kind, the
// labels (with values) and annotation keys that were added, changed or removed. Objects that
// appear or go away are logged at debug level (-zap-log-level=debug), since the
// initial list alone reports every cached object.
type Reporter struct {
	Reader  client.Reader
	GVK     schema.GroupVersionKind
	pending *pendingChanges
}

// NewReporter returns a Reporter for kind gvk that reads from reader (the cache).
func NewReporter(reader client.Reader, gvk schema.GroupVersionKind) *Reporter {
	return &Reporter{Reader: reader, GVK: gvk, pending: newPendingChanges()}
}

// Reconcile reports what changed on req's object since it was last reported.
func (r *Reporter) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	log := logr.FromContextOrDiscard(ctx)
	before, changed := r.pending.take(req.NamespacedName)
	obj := engine.NewObject(r.GVK)
	err := r.Reader.Get(ctx, req.NamespacedName, obj)
	switch {
	case apierrors.IsNotFound(err):
		log.V(1).Info("object gone")
		return reconcile.Result{}, nil
	case err != nil:
		return reconcile.Result{}, err
	case !changed:
		log.V(1).Info("object observed", "labels", obj.GetLabels())
		return reconcile.Result{}, nil
	}
	r.report(log, before, snapshot{labels: obj.GetLabels(), annotations: obj.GetAnnotations()})
	return reconcile.Result{}, nil
}

func (r *Reporter) report(log logr.Logger, before, after snapshot) {
	labels, annotations := Diff(before.labels, after.labels), Diff(before.annotations, after.annotations)
	if labels.Empty() && annotations.Empty() {
		return // changed and changed back before this reconcile
	}
	log.Info("metadata changed", "labels", labels, "annotations", annotations.Keys())
}
