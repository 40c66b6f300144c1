package rulecontroller

import (
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/metawatch/metawatch/pkg/telemetry"
)

// metadataChanged passes creates, deletes and updates that change labels or
// annotations; resourceVersion-only updates (status churn) and generic events
// are dropped. Every verdict is counted in metawatch_events_total{kind}.
func metadataChanged(kind string) predicate.Predicate {
	passed := telemetry.Events.WithLabelValues(kind, telemetry.VerdictPassed)
	filtered := telemetry.Events.WithLabelValues(kind, telemetry.VerdictFiltered)
	count := func(pass bool) bool {
		if pass {
			passed.Inc()
		} else {
			filtered.Inc()
		}
		return pass
	}
	return predicate.Funcs{
		CreateFunc: func(event.CreateEvent) bool { return count(true) },
		DeleteFunc: func(event.DeleteEvent) bool { return count(true) },
		UpdateFunc: func(e event.UpdateEvent) bool {
			return count(labelsOrAnnotationsChanged.Update(e) || controllerChanged(e))
		},
		GenericFunc: func(event.GenericEvent) bool { return count(false) },
	}
}

// labelsOrAnnotationsChanged passes updates whose labels or annotations differ.
var labelsOrAnnotationsChanged = predicate.Or(predicate.LabelChangedPredicate{}, predicate.AnnotationChangedPredicate{})

// namespaceMetadataChanged passes creates (objects may wait for them) and
// updates that change a Namespace's labels or annotations; a deleted
// Namespace takes its objects along.
func namespaceMetadataChanged() predicate.Predicate {
	return predicate.Funcs{
		CreateFunc:  func(event.CreateEvent) bool { return true },
		DeleteFunc:  func(event.DeleteEvent) bool { return false },
		UpdateFunc:  labelsOrAnnotationsChanged.Update,
		GenericFunc: func(event.GenericEvent) bool { return false },
	}
}
