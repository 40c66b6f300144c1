package rulecontroller

import (
	"fmt"
	"maps"
	"strings"
	"sync"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/metawatch/metawatch/pkg/eventdigest"
	"github.com/metawatch/metawatch/pkg/rules"
	"github.com/metawatch/metawatch/pkg/telemetry"
)

// ReasonMissingRequired is the Event reason for an object that starts violating a require rule.
const ReasonMissingRequired = "MissingRequiredMetadata"

// violators is, per object, the require rules it violates.
type violators map[types.NamespacedName]map[string]bool

// audit tracks which objects of one kind violate which rules, so that the
// violations gauge is exact and an object gets one Event when it starts
// violating a rule, not one per reconcile, nor one per reload: violations the
// previous generation reported (inherited) get no second Event. It holds only
// the violating objects; nothing is stored in etcd. Sharded, it holds only
// the objects of the buckets this replica holds (audit_shard.go).
type audit struct {
	kind   string
	gvk    schema.GroupVersionKind
	events *eventdigest.Digest
	owner  *Audits
	// requires says, per require rule, what it requires (for the reports).
	requires map[string]string

	mu        sync.Mutex
	failing   violators
	inherited violators      // reported by earlier generations, for objects not observed since
	counts    map[string]int // rule -> violating objects
	off       offCounts
	left      *leftKeys // keys the guardrails keep metawatch from writing
	holder    Holder    // see Audits.holder
	// uids are the uids of the objects in failing, inherited and off.held:
	// their buckets say which to drop when this replica stops holding them.
	uids map[types.NamespacedName]types.UID
}

// observe records the current violations of the object keyed key (with
// uid): an occurrence of an aggregate Event (events.go) for each rule it
// starts violating (unless reported before a reload),
// and the gauge follows. Sharded, an object whose bucket this replica does
// not hold is another replica's to audit: it is forgotten here.
func (a *audit) observe(key types.NamespacedName, uid types.UID, violations []rules.Violation) {
	now := map[string]bool{}
	for _, v := range violations {
		now[v.Rule] = true
	}
	a.mu.Lock()
	if !a.holds(uid) {
		a.forgetLocked(key)
		a.mu.Unlock()
		return
	}
	before, reported := a.failing[key], a.inherited[key]
	delete(a.inherited, key)
	a.setLocked(key, before, now)
	a.trackLocked(key, uid)
	a.mu.Unlock()
	for _, v := range violations {
		if !before[v.Rule] && !reported[v.Rule] {
			occur(a.events, a.kind, key, ReasonMissingRequired, "Audit", v.Rule, missingMessage(v.Rule), describeMissing(v))
		}
	}
}

// forget drops a deleted object's violations.
func (a *audit) forget(key types.NamespacedName) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.forgetLocked(key)
}

// forgetLocked drops everything key counts for or was reported for.
func (a *audit) forgetLocked(key types.NamespacedName) {
	delete(a.inherited, key)
	a.setLocked(key, a.failing[key], nil)
	a.setHeldLocked(key, nil)
	a.observeLeft(key, "", nil, nil)
	delete(a.uids, key)
}

// setLocked moves key from violating before to violating now, counting.
func (a *audit) setLocked(key types.NamespacedName, before, now map[string]bool) {
	if !maps.Equal(before, now) {
		a.owner.changes.Add(1)
	}
	for rule := range now {
		if !before[rule] {
			a.add(rule, 1)
			a.addOff(rule, key.Namespace, reasonViolation, 1)
		}
	}
	for rule := range before {
		if !now[rule] {
			a.add(rule, -1)
			a.addOff(rule, key.Namespace, reasonViolation, -1)
		}
	}
	if len(now) == 0 {
		delete(a.failing, key)
		return
	}
	a.failing[key] = now
}

func (a *audit) add(rule string, delta int) {
	a.counts[rule] += delta
	if a.owner.isLive() {
		telemetry.RuleViolations.WithLabelValues(rule, a.kind).Add(float64(delta))
	}
}

// reported is every violation this audit or an earlier one reported and that
// no generation since has seen end, with the uids of their objects.
func (a *audit) reported() (violators, map[types.NamespacedName]types.UID) {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make(violators, len(a.failing)+len(a.inherited))
	uids := make(map[types.NamespacedName]types.UID, len(a.failing)+len(a.inherited))
	for _, m := range []violators{a.inherited, a.failing} {
		for key, rs := range m {
			out[key] = rs
			if uid, ok := a.uids[key]; ok {
				uids[key] = uid
			}
		}
	}
	return out, uids
}

func describeMissing(v rules.Violation) string {
	var parts []string
	if len(v.MissingLabels) > 0 {
		parts = append(parts, fmt.Sprintf("missing labels %s", strings.Join(v.MissingLabels, ", ")))
	}
	if len(v.MissingAnnotations) > 0 {
		parts = append(parts, fmt.Sprintf("missing annotations %s", strings.Join(v.MissingAnnotations, ", ")))
	}
	return strings.Join(parts, "; ")
}

// Audits are one generation's audits, one per kind. Only the live generation
// publishes metawatch_rule_violations: during a reload two generations run,
// and the new one starts counting from zero.
type Audits struct {
	// live is read under an audit's lock, which Publish takes under mu: an
	// atomic, so that an audit never waits for mu (the buckets held change
	// at any time, see dropUnheld).
	live atomic.Bool
	// changes counts the changes of what the audits hold (Version).
	changes atomic.Uint64
	mu      sync.Mutex
	kinds   map[string]*audit
	// holder, when set (sharding), says which objects this replica audits:
	// those of the buckets it holds (see Wiring.Share).
	holder Holder
}

// NewAudits returns a generation's audits; live ones publish from the start.
func NewAudits(live bool) *Audits {
	a := &Audits{kinds: map[string]*audit{}}
	a.live.Store(live)
	return a
}

func (a *Audits) forKind(gvk schema.GroupVersionKind, rs []rules.Rule, events *eventdigest.Digest) *audit {
	a.mu.Lock()
	defer a.mu.Unlock()
	kind := kindLabel(gvk)
	au := &audit{kind: kind, gvk: gvk, requires: requirements(rs), events: events, owner: a, holder: a.holder, failing: violators{}, inherited: violators{}, counts: map[string]int{}, off: newOffCounts(),
		left: newLeftKeys(), uids: map[types.NamespacedName]types.UID{}}
	a.kinds[kind] = au
	return au
}

func (a *Audits) isLive() bool { return a.live.Load() }

// Version changes whenever what Findings gives may have changed.
func (a *Audits) Version() uint64 { return a.changes.Load() }

// Inherit takes, from the audits of the generation this one replaces (stopped
// by now), the violations already reported, so that they are not reported again.
func (a *Audits) Inherit(previous *Audits) {
	previous.mu.Lock()
	old := make(map[string]*audit, len(previous.kinds))
	for kind, au := range previous.kinds {
		old[kind] = au
	}
	previous.mu.Unlock()
	a.mu.Lock()
	defer a.mu.Unlock()
	for kind, au := range a.kinds {
		if prev, ok := old[kind]; ok {
			reported, uids := prev.reported()
			au.mu.Lock()
			au.inherited = reported
			maps.Copy(au.uids, uids)
			au.mu.Unlock()
		}
	}
}

// Publish makes these audits' counts metawatch_rule_violations and
// metawatch_rule_objects_off, replacing
// every other generation's (a removed rule's series goes).
func (a *Audits) Publish() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.live.Store(true) // before the reset: what an audit adds from now on is not lost
	telemetry.RuleViolations.Reset()
	telemetry.ObjectsOff.Reset()
	telemetry.KeysLeft.Reset()
	for kind, au := range a.kinds {
		au.mu.Lock()
		for rule, n := range au.counts {
			if n > 0 {
				telemetry.RuleViolations.WithLabelValues(rule, kind).Set(float64(n))
			}
		}
		au.publishOff()
		au.mu.Unlock()
		au.publishLeft()
	}
}

// Retire stops publishing.
func (a *Audits) Retire() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.live.Store(false)
}
