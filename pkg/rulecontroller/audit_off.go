package rulecontroller

import (
	"maps"

	"k8s.io/apimachinery/pkg/types"

	"github.com/metawatch/metawatch/pkg/telemetry"
)

// Reasons of metawatch_rule_objects_off.
const (
	reasonViolation = "violation"
	reasonHeld      = "conflict"
)

// offKey is one series of metawatch_rule_objects_off.
type offKey struct{ rule, namespace, reason string }

// offCounts count, per rule, namespace and reason, the objects of a kind
// that are not as a rule wants and that metawatch leaves so: it violates a
// requirement, or another field manager holds a key the rule wants. The
// audit's mutex guards them.
type offCounts struct {
	counts map[offKey]int
	// named are the namespaces with series of their own: the first
	// telemetry.OtherNamespacesAfter seen; the others count as one.
	named map[string]bool
	// held is, per object, the rules whose keys another manager holds.
	held violators
}

func newOffCounts() offCounts {
	return offCounts{counts: map[offKey]int{}, named: map[string]bool{}, held: violators{}}
}

func (a *audit) namespaceLabel(ns string) string {
	if a.off.named[ns] {
		return ns
	}
	if len(a.off.named) < telemetry.OtherNamespacesAfter {
		a.off.named[ns] = true
		return ns
	}
	return telemetry.OtherNamespaces
}

func (a *audit) addOff(rule, namespace, reason string, delta int) {
	k := offKey{rule: rule, namespace: a.namespaceLabel(namespace), reason: reason}
	a.off.counts[k] += delta
	if a.owner.isLive() {
		telemetry.ObjectsOff.WithLabelValues(rule, a.kind, k.namespace, reason).Add(float64(delta))
	}
}

// observeHeld records the rules whose keys on the object (keyed key, with
// uid) another field manager now holds (metawatch yielded them); sharded,
// only for an object of a bucket this replica holds, like observe.
func (a *audit) observeHeld(key types.NamespacedName, uid types.UID, held map[string]bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.holds(uid) {
		a.forgetLocked(key)
		return
	}
	a.setHeldLocked(key, held)
	a.trackLocked(key, uid)
}

func (a *audit) setHeldLocked(key types.NamespacedName, now map[string]bool) {
	before := a.off.held[key]
	if !maps.Equal(before, now) {
		a.owner.changes.Add(1)
	}
	for rule := range now {
		if !before[rule] {
			a.addOff(rule, key.Namespace, reasonHeld, 1)
		}
	}
	for rule := range before {
		if !now[rule] {
			a.addOff(rule, key.Namespace, reasonHeld, -1)
		}
	}
	if len(now) == 0 {
		delete(a.off.held, key)
		return
	}
	a.off.held[key] = now
}

// publishOff sets metawatch_rule_objects_off from the counts (the caller
// reset it).
func (a *audit) publishOff() {
	for k, n := range a.off.counts {
		if n > 0 {
			telemetry.ObjectsOff.WithLabelValues(k.rule, a.kind, k.namespace, k.reason).Set(float64(n))
		}
	}
}
