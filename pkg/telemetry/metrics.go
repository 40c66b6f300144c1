// Package telemetry holds metawatch's own Prometheus metrics, registered on
// controller-runtime's registry so they are served next to its reconcile and
// workqueue metrics on --metrics-bind-address. Every name has the metawatch_ prefix.
package telemetry

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

	// InformerHandlerBacklog is the number of notifications queued for the
	// event handlers of each kind's streaming informer (package informer):
	// each handler's queue is bounded, and a full one holds the watch stream
	// back instead of growing.
	InformerHandlerBacklog = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "metawatch_informer_handler_backlog",
		Help: "Notifications queued for the event handlers of each kind's informer, not yet handled (each handler's queue holds at most 1024; a full one holds the watch back).",
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
		Help: "Rounds of a fight: times metawatch left a key on an object to something that kept undoing its write (taking, removing or putting back the key).",
	}, []string{"rule", "kind"})

	// RuleViolations is the number of objects that currently miss what a rule requires.
	RuleViolations = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "metawatch_rule_violations",
		Help: "Objects currently missing a label or annotation a rule requires.",
	}, []string{"rule", "kind"})
	// ObjectsOff is, per rule, kind and namespace, the objects currently not
	// as the rule wants that metawatch does not fix: reason "violation" (a
	// requirement fails) or "conflict" (another field manager holds a key
	// the rule wants). Bounded: beyond the first OtherNamespacesAfter
	// namespaces of a kind, the rest are counted under namespace OtherNamespaces.
	ObjectsOff = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "metawatch_rule_objects_off",
		Help: "Objects currently not as a rule wants and left so: reason violation (a requirement fails) or conflict (another field manager holds a key); " +
			"per namespace, the namespaces beyond the first 100 of a kind counted as namespace \"(other)\".",
	}, []string{"rule", "kind", "namespace", "reason"})
)

// OtherNamespaces is the namespace label of ObjectsOff's series that count
// the namespaces beyond the first OtherNamespacesAfter of a kind.
const (
	OtherNamespaces      = "(other)"
	OtherNamespacesAfter = 100
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
	// AdmissionPolicyReady is 1 for each rule with atCreation whose admission
	// policy and binding are in place and current, 0 for one whose are not.
	AdmissionPolicyReady = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "metawatch_admission_policy_ready",
		Help: "1 if the MutatingAdmissionPolicy and binding of a rule with atCreation are in place and current, 0 if not (the API server does not serve them, " +
			"RBAC forbids them, or the server refused them: see /readyz and the AtCreationUnavailable Event); absent on a replica that leaves them to another.",
	}, []string{"rule"})
	// AdmissionCleanupBlocked is 1 while admission policies of this
	// installation that should be gone remain, by why: forbidden (RBAC) or
	// dry-run (--dry-run deletes nothing).
	AdmissionCleanupBlocked = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "metawatch_admission_cleanup_blocked",
		Help: "1 while MutatingAdmissionPolicies of this installation that its flags, RBAC or configuration no longer allow remain in the cluster, writing keys " +
			"on every create: reason forbidden (RBAC forbids listing or deleting them), dry-run (--dry-run deletes nothing). /readyz and the " +
			"AdmissionCleanupBlocked Event give the kubectl line that deletes them.",
	}, []string{"reason"})
	// WatchReady is 1 for each watched kind whose informer has synced, 0 for one that is not (yet), e.g. forbidden.
	WatchReady = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "metawatch_watch_ready",
		Help: "1 if the kind's informer is synced and serving, 0 if not, e.g. because RBAC forbids listing it.",
	}, []string{"kind"})
)

// Sharding modes: the API server filters by shard, the client drops what is
// not this replica's, or the replica is not sharded.
const (
	ShardingServer = "server"
	ShardingClient = "client"
	ShardingOff    = "off"
)

var (
	// ShardingMode is 1 for the mode this replica runs in, 0 for the others.
	ShardingMode = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "metawatch_sharding_mode",
		Help: "1 for the sharding mode this replica runs in: server (the API server filters by shard), client (it does not; objects of other shards are dropped on receipt) or off (not sharded).",
	}, []string{"mode"})
	// ShardDropped counts objects of other replicas' buckets dropped on
	// receipt, by stage: "wire" before decoding (the API server does not
	// filter by shard), "decoded" after (it should have: kubernetes#140510).
	ShardDropped = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "metawatch_sharding_dropped_objects_total",
		Help: "Objects of other replicas' buckets this replica received and dropped: stage=wire before decoding (the API server does not filter by shard), stage=decoded after decoding (it should have filtered them).",
	}, []string{"stage"})
	// BucketsOwned is the number of hash buckets whose Lease this replica holds.
	BucketsOwned = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "metawatch_buckets_owned",
		Help: "Hash buckets (of 64) whose Lease this replica holds, so whose objects it writes; 0 when not sharded.",
	})
	// BucketsUnwritable is the number of buckets assigned to this replica
	// that it has not been able to write for longer than a hand-over takes.
	BucketsUnwritable = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "metawatch_buckets_unwritable",
		Help: "Hash buckets assigned to this replica that it has not been able to write for longer than twice the lease duration (a hand-over stuck, or its Lease writes failing); 0 when not sharded.",
	})
)

// WritesFenced counts writes not sent because this replica's claim (its
// leader Lease, or its bucket's Lease and membership) had lapsed: at
// admission, or as the request was to be sent (after the rate limiter).
var WritesFenced = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "metawatch_writes_fenced_total",
	Help: "Writes not sent because this replica's Lease had lapsed, by stage: admission (before the rate limiter) or send (as the request was to leave).",
}, []string{"stage"})

// UnchangedEvents counts, per resource, the watch events the transport left
// out before decoding because the object was unchanged but for its
// resourceVersion (a status-only update, once managedFields are stripped):
// they never reach an informer's store or a predicate, so
// metawatch_events_total does not count them.
var UnchangedEvents = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "metawatch_watch_events_unchanged_total",
	Help: "Watch events left out before decoding, per resource, because the object's metadata was unchanged but for its resourceVersion (status-only updates); bookmarks carry their resourceVersion.",
}, []string{"resource"})

// ShardCacheMoves counts how the caches followed this replica's buckets
// when they changed, per move: in_place (the buckets that came were
// listed alone, the objects of those that went dropped, nothing else listed),
// relisted (the kind was listed again), failed (tried again).
var ShardCacheMoves = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "metawatch_sharding_cache_moves_total",
	Help: "How a sharded kind's cache followed this replica's buckets when they changed: outcome=in_place (only the buckets that came were listed), relisted (the whole kind was listed again), failed (tried again).",
}, []string{"outcome"})

// ShardMovedObjects counts the objects a move in place took into the caches
// (in: listed with the buckets that came) or out of them (out).
var ShardMovedObjects = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "metawatch_sharding_moved_objects_total",
	Help: "Objects taken into the caches (direction=in, listed with the buckets that came to this replica) or out of them (direction=out) by moves in place.",
}, []string{"direction"})

// Outcomes of ShardCacheMoves and directions of ShardMovedObjects.
const (
	MoveInPlace  = "in_place"
	MoveRelisted = "relisted"
	MoveFailed   = "failed"
	MoveIn       = "in"
	MoveOut      = "out"
)

// Stages at which ShardDropped drops an object.
const (
	StageWire    = "wire"
	StageDecoded = "decoded"
)

// SetShardingMode marks mode as the one this replica runs in.
func SetShardingMode(mode string) {
	for _, m := range []string{ShardingServer, ShardingClient, ShardingOff} {
		ShardingMode.WithLabelValues(m).Set(0)
	}
	ShardingMode.WithLabelValues(mode).Set(1)
}

func init() {
	ctrlmetrics.Registry.MustRegister(Events, CachedObjects, InformerHandlerBacklog, RuleWrites, RuleConflicts, OwnershipFights, RuleViolations,
		ObjectsOff, ConfigGeneration, ConfigLastReloadSuccessful, ConfigHash, ConfigReloadRetries, WritesFrozen, WatchReady, AdmissionPolicyReady, AdmissionCleanupBlocked,
		ShardingMode, ShardDropped, ShardCacheMoves, ShardMovedObjects, BucketsOwned, BucketsUnwritable, WritesFenced, UnchangedEvents)
}
