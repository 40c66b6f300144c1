package telemetry

import (
	"github.com/prometheus/client_golang/prometheus"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// EventsFolded counts the per-object occurrences (an object starting to
// violate a rule, a conflict, a fight, keys a guardrail leaves) folded into
// aggregate Events (package eventdigest), by the Event's reason.
var EventsFolded = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "metawatch_events_folded_total",
	Help: "Per-object occurrences folded into aggregate Events (one per reason, rule, kind and namespace), by reason.",
}, []string{"reason"})

// EventsDropped counts occurrences no Event will tell: beyond the bound of
// keys waiting, waiting past the bound on Event writes for too long, or
// refused by the API server.
var EventsDropped = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "metawatch_events_dropped_total",
	Help: "Per-object occurrences no aggregate Event tells: beyond the bound on Event writes per minute for too long, beyond the keys waiting, or refused, by reason.",
}, []string{"reason"})

// EventWrites counts the aggregate Events' writes: creates (a new series)
// and patches (its count), by result.
var EventWrites = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "metawatch_event_writes_total",
	Help: "Writes of aggregate Events, by verb (create: a new Event; patch: its series' count) and result (written, error).",
}, []string{"verb", "result"})

func init() { ctrlmetrics.Registry.MustRegister(EventsFolded, EventsDropped, EventWrites) }
