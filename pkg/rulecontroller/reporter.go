package rulecontroller

import (
	"context"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// reporter is the first step of every kind's controller: it logs, for each
// object, the labels (with values) and annotation keys that were added,
// changed or removed. Objects that go away, and new ones a rule acts on, are
// logged at debug level (-zap-log-level=debug), since the initial list alone
// would report every cached object; new objects no rule acts on are not
// reconciled at all (see ruleReconciler.settled).
type reporter struct {
	memory *memory
}

// newReporter returns a reporter that takes its snapshots from mem.
func newReporter(mem *memory) *reporter {
	return &reporter{memory: mem}
}

// reconcileObject reports what changed on obj (nil: gone) since it was last reported.
func (r *reporter) reconcileObject(ctx context.Context, key types.NamespacedName, obj *metav1.PartialObjectMetadata) error {
	log := logr.FromContextOrDiscard(ctx)
	before, changed := r.memory.snapshots.take(key)
	switch {
	case obj == nil:
		log.V(1).Info("object gone")
	case !changed:
		log.V(1).Info("object observed", "labels", obj.GetLabels())
	default:
		r.report(log, before, snapshot{labels: obj.GetLabels(), annotations: obj.GetAnnotations()})
	}
	return nil
}

func (r *reporter) report(log logr.Logger, before, after snapshot) {
	labels, annotations := diffMaps(before.labels, after.labels), diffMaps(before.annotations, after.annotations)
	if labels.Empty() && annotations.Empty() {
		return // changed and changed back before this reconcile
	}
	log.Info("metadata changed", "labels", labels, "annotations", annotations.Keys())
}
