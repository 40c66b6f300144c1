package controller

import (
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/metawatch/metawatch/pkg/metrics"
)

// MetadataChanged passes creates, deletes and updates that change labels or
// annotations; resourceVersion-only updates (status churn) and generic events
// are dropped. Every verdict is counted in metawatch_events_total{kind}.
func MetadataChanged(kind string) predicate.Predicate {
	passed := metrics.Events.WithLabelValues(kind, metrics.VerdictPassed)
	filtered := metrics.Events.WithLabelValues(kind, metrics.VerdictFiltered)
	count := func(pass bool) bool {
		if pass {
			passed.Inc()
		} else {
			filtered.Inc()
		}
		return pass
	}
	return predicate.Funcs{
		CreateFunc:  func(event.CreateEvent) bool { return count(true) },
		DeleteFunc:  func(event.DeleteEvent) bool { return count(true) },
		UpdateFunc:  func(e event.UpdateEvent) bool { return count(labelsOrAnnotationsChanged.Update(e)) },
		GenericFunc: func(event.GenericEvent) bool { return count(false) },
	}
}

// labelsOrAnnotationsChanged passes updates whose labels or annotations differ.
var labelsOrAnnotationsChanged = predicate.Or(predicate.LabelChangedPredicate{}, predicate.AnnotationChangedPredicate{})
