package controller

import (
	"context"
	"slices"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/metawatch/metawatch/pkg/engine"
	"github.com/metawatch/metawatch/pkg/rules"
)

// namespaceFanout maps a Namespace whose labels or annotations changed to the
// objects of kind gvk in it that a copy rule applies to, found through the
// cache's namespace index (no request to the API server, no deep copies).
func namespaceFanout(reader client.Reader, gvk schema.GroupVersionKind, rs []rules.Rule) handler.EventHandler {
	copiers := copyRules(rs)
	return handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, ns client.Object) []reconcile.Request {
		list := engine.NewList(gvk)
		if err := reader.List(ctx, list, client.InNamespace(ns.GetName()), client.UnsafeDisableDeepCopy); err != nil {
			logr.FromContextOrDiscard(ctx).Error(err, "listing objects to re-evaluate after a namespace change", "namespace", ns.GetName())
			return nil
		}
		var reqs []reconcile.Request
		for i := range list.Items {
			if anyMatches(copiers, list.Items[i].Labels) {
				reqs = append(reqs, requestFor(&list.Items[i]))
			}
		}
		return reqs
	})
}

// namespaceMetadataChanged passes only updates that change a Namespace's labels
// or annotations: a new namespace has no objects yet, a deleted one takes them along.
func namespaceMetadataChanged() predicate.Predicate {
	return predicate.Funcs{
		CreateFunc:  func(event.CreateEvent) bool { return false },
		DeleteFunc:  func(event.DeleteEvent) bool { return false },
		UpdateFunc:  labelsOrAnnotationsChanged.Update,
		GenericFunc: func(event.GenericEvent) bool { return false },
	}
}

func copyRules(rs []rules.Rule) []rules.Rule {
	return slices.DeleteFunc(slices.Clone(rs), func(r rules.Rule) bool { return !r.CopiesFromNamespace() })
}

func anyMatches(rs []rules.Rule, objLabels map[string]string) bool {
	for _, r := range rs {
		if r.Match == nil || r.Match.Matches(labels.Set(objLabels)) {
			return true
		}
	}
	return false
}
