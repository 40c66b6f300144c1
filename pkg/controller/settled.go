package controller

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"sigs.k8s.io/controller-runtime/pkg/client"

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
func (r *RuleReconciler) settled(ctx context.Context, o client.Object) bool {
	obj, ok := o.(*metav1.PartialObjectMetadata)
	if !ok {
		return false
	}
	if !r.writable(obj) {
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
