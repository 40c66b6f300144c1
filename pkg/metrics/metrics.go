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

// Results of a rule's write.
const (
	ResultApplied  = "applied"
	ResultRemoved  = "removed"
	ResultConflict = "conflict"
	ResultError    = "error"
	ResultDryRun   = "dry-run"
)

var (
	// RuleWrites counts, per rule, the objects written (or, with --dry-run,
	// that would have been) because of that rule.
	RuleWrites = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "metawatch_rule_writes_total",
		Help: "Writes per rule and kind, by result (applied, removed, conflict, error, dry-run).",
	}, []string{"rule", "kind", "result"})

	// RuleConflicts counts keys a rule wanted that another field manager owns with another value.
	RuleConflicts = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "metawatch_rule_conflicts_total",
		Help: "Keys a rule did not write because another field manager owns them with another value.",
	}, []string{"rule", "kind"})

	// RuleViolations is the number of objects that currently miss what a rule requires.
	RuleViolations = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "metawatch_rule_violations",
		Help: "Objects currently missing a label or annotation a rule requires.",
	}, []string{"rule", "kind"})
)

func init() {
	ctrlmetrics.Registry.MustRegister(Events, CachedObjects, RuleWrites, RuleConflicts, RuleViolations)
}
