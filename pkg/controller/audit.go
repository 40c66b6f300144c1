package controller

import (
	"fmt"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"

	"github.com/metawatch/metawatch/pkg/metrics"
	"github.com/metawatch/metawatch/pkg/rules"
)

// ReasonMissingRequired is the Event reason for an object that starts violating a require rule.
const ReasonMissingRequired = "MissingRequiredMetadata"

// violators is, per object, the require rules it violates.
type violators map[types.NamespacedName]map[string]bool

// audit tracks which objects of one kind violate which rules, so that the
// violations gauge is exact and an object gets one Event when it starts
// violating a rule, not one per reconcile, nor one per reload: violations the
// previous generation reported (inherited) get no second Event. It holds only
// the violating objects; nothing is stored in etcd.
type audit struct {
	kind     string
	recorder events.EventRecorder
	owner    *Audits

	mu        sync.Mutex
	failing   violators
	inherited violators      // reported by earlier generations, for objects not observed since
	counts    map[string]int // rule -> violating objects
	off       offCounts
	left      *leftKeys // keys the guardrails keep metawatch from writing
}

// observe records obj's current violations: an Event for each rule it starts
// violating (unless reported before a reload), and the gauge follows.
func (a *audit) observe(key types.NamespacedName, obj runtime.Object, violations []rules.Violation) {
	now := map[string]bool{}
	for _, v := range violations {
		now[v.Rule] = true
	}
	a.mu.Lock()
	before, reported := a.failing[key], a.inherited[key]
	delete(a.inherited, key)
	a.setLocked(key, before, now)
	a.mu.Unlock()
	for _, v := range violations {
		if !before[v.Rule] && !reported[v.Rule] {
			a.recorder.Eventf(obj, nil, corev1.EventTypeWarning, ReasonMissingRequired, "Audit", "rule %s: %s", v.Rule, describeMissing(v))
		}
	}
}

// forget drops a deleted object's violations.
func (a *audit) forget(key types.NamespacedName) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.inherited, key)
	a.setLocked(key, a.failing[key], nil)
	a.setHeldLocked(key, nil)
	a.observeLeft(key, nil)
}

// setLocked moves key from violating before to violating now, counting.
func (a *audit) setLocked(key types.NamespacedName, before, now map[string]bool) {
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
		metrics.RuleViolations.WithLabelValues(rule, a.kind).Add(float64(delta))
	}
}

// reported is every violation this audit or an earlier one reported and that
// no generation since has seen end.
func (a *audit) reported() violators {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make(violators, len(a.failing)+len(a.inherited))
	for _, m := range []violators{a.inherited, a.failing} {
		for key, rs := range m {
			out[key] = rs
		}
	}
	return out
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
	mu    sync.Mutex
	live  bool
	kinds map[string]*audit
}

// NewAudits returns a generation's audits; live ones publish from the start.
func NewAudits(live bool) *Audits { return &Audits{live: live, kinds: map[string]*audit{}} }

func (a *Audits) forKind(kind string, recorder events.EventRecorder) *audit {
	a.mu.Lock()
	defer a.mu.Unlock()
	au := &audit{kind: kind, recorder: recorder, owner: a, failing: violators{}, inherited: violators{}, counts: map[string]int{}, off: newOffCounts(), left: newLeftKeys()}
	a.kinds[kind] = au
	return au
}

func (a *Audits) isLive() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.live
}

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
			reported := prev.reported()
			au.mu.Lock()
			au.inherited = reported
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
	a.live = true
	metrics.RuleViolations.Reset()
	metrics.ObjectsOff.Reset()
	metrics.KeysLeft.Reset()
	for kind, au := range a.kinds {
		au.mu.Lock()
		for rule, n := range au.counts {
			if n > 0 {
				metrics.RuleViolations.WithLabelValues(rule, kind).Set(float64(n))
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
	a.live = false
}
