package rulecontroller

import (
	"context"
	"slices"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"

	"github.com/metawatch/metawatch/pkg/metacache"
	"github.com/metawatch/metawatch/pkg/rules"
)

// namespaceFanout enqueues, when a Namespace's labels or annotations change,
// the objects of kind gvk in it that a copy rule applies to, found through the
// cache's namespace index (no request to the API server, no deep copies), at
// fanoutPriority; and when a Namespace reaches the cache, the objects that
// waited for it and are not settled.
func namespaceFanout(reader client.Reader, gvk schema.GroupVersionKind, ruler *ruleReconciler) handler.EventHandler {
	copiers := copyRules(ruler.Rules)
	return handler.Funcs{
		CreateFunc: func(ctx context.Context, e event.CreateEvent, q queue) {
			ruler.wake(ctx, namespaceSource(e.Object.GetName()), q)
		},
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q queue) {
			ns := e.ObjectNew.GetName()
			if !ruler.cachesNamespace(ns) {
				return // none of the kind's objects is cached there
			}
			list := metacache.NewList(gvk)
			if err := reader.List(ctx, list, listOptions(ruler.noCopy(), client.InNamespace(ns))...); err != nil {
				logr.FromContextOrDiscard(ctx).Error(err, "listing objects to re-evaluate after a namespace change", "namespace", ns)
				return
			}
			for i := range list.Items {
				if anyMatches(copiers, list.Items[i].Labels) {
					addFanout(q, requestFor(&list.Items[i]))
				}
			}
		},
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
