package telemetry

import (
	"github.com/prometheus/client_golang/prometheus"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// RemovalsHeld is, per kind, the objects whose removals and releases the
// removal brake holds now (package brake): the configuration removes keys
// on more objects than the bound, and waits for the operator's approval.
var RemovalsHeld = prometheus.NewGaugeVec(prometheus.GaugeOpts{
	Name: "metawatch_removals_held",
	Help: "Objects whose key removals or releases the removal brake holds now, by kind, until the held change is approved " +
		"(annotation metawatch.dev/allow-removals=<the change's token, which the RemovalsHeld Event names> on the selectors ConfigMap) or the bound raised.",
}, []string{"kind"})

// RemovalsHeldTotal counts the decisions the removal brake held, by kind.
var RemovalsHeldTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "metawatch_removals_held_total",
	Help: "Times the removal brake held an object's key removals or releases, by kind.",
}, []string{"kind"})

func init() { ctrlmetrics.Registry.MustRegister(RemovalsHeld, RemovalsHeldTotal) }
