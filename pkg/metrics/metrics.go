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

	// OwnershipFights counts keys metawatch stopped taking back because another
	// manager kept taking them (two controllers forcing one key).
	OwnershipFights = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "metawatch_ownership_fights_total",
		Help: "Keys metawatch stopped taking back because another field manager kept taking them from it.",
	}, []string{"rule", "kind"})

	// RuleViolations is the number of objects that currently miss what a rule requires.
	RuleViolations = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "metawatch_rule_violations",
		Help: "Objects currently missing a label or annotation a rule requires.",
	}, []string{"rule", "kind"})
)

var (
	// ConfigGeneration is the number of the running configuration generation (0: none yet).
	ConfigGeneration = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "metawatch_config_generation",
		Help: "Generation of the running configuration; increases with each reload that took effect.",
	})
	// ConfigLastReloadSuccessful is 1 when the last configuration seen was applied, 0 when it was rejected.
	ConfigLastReloadSuccessful = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "metawatch_config_last_reload_successful",
		Help: "1 if the last configuration change was applied, 0 if it was rejected (the previous generation keeps running) or the ConfigMap is gone.",
	})
	// ConfigHash identifies the running configuration by content (config.Hash).
	ConfigHash = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "metawatch_config_hash",
		Help: "Identifies the running configuration by content: the first 48 bits of the SHA-256 of its canonical JSON form, so comments and whitespace do not change it.",
	})
	// ConfigReloadRetries counts attempts to start a valid configuration that
	// failed for a reason that is not the configuration's (retried with backoff).
	ConfigReloadRetries = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "metawatch_config_reload_retries_total",
		Help: "Attempts to start a valid configuration that failed for a transient reason (API server unreachable, sync timeout) and are retried.",
	})
	// WritesFrozen is 1 for each watched kind whose rules may not write now,
	// because its own list or watch, or that of the Namespaces it copies from, is forbidden.
	WritesFrozen = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "metawatch_writes_frozen",
		Help: "1 if the kind's rules write nothing (and release nothing) because its list or watch, or the Namespaces' it copies from, is forbidden.",
	}, []string{"kind"})
	// WatchReady is 1 for each watched kind whose informer has synced, 0 for one that is not (yet), e.g. forbidden.
	WatchReady = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "metawatch_watch_ready",
		Help: "1 if the kind's informer is synced and serving, 0 if not, e.g. because RBAC forbids listing it.",
	}, []string{"kind"})
)

func init() {
	ctrlmetrics.Registry.MustRegister(Events, CachedObjects, RuleWrites, RuleConflicts, OwnershipFights, RuleViolations,
		ConfigGeneration, ConfigLastReloadSuccessful, ConfigHash, ConfigReloadRetries, WritesFrozen, WatchReady)
}
