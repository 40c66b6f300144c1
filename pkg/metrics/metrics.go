// Package metrics holds metawatch's own Prometheus metrics, registered on
// controller-runtime's registry so they are served next to its reconcile and
// workqueue metrics on --metrics-bind-address. Every name has the metawatch_ prefix.
package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Verdicts of the event predicates.
const (
	VerdictPassed   = "passed"
	VerdictFiltered = "filtered"
)

var (
	// Events counts informer events per kind by predicate verdict: status-only
	// updates are "filtered" and never reach a reconciler.
	Events = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "metawatch_events_total",
		Help: "Informer events per kind, by predicate verdict (passed or filtered).",
	}, []string{"kind", "verdict"})

	// CachedObjects is the number of objects of each kind in the cache.
	CachedObjects = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "metawatch_cached_objects",
		Help: "Objects of each watched kind held in the metadata cache.",
	}, []string{"kind"})
)

func init() {
	ctrlmetrics.Registry.MustRegister(Events, CachedObjects)
}
