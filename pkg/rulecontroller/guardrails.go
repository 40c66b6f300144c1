package rulecontroller

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/metawatch/metawatch/pkg/config"
	"github.com/metawatch/metawatch/pkg/rules"
	"github.com/metawatch/metawatch/pkg/telemetry"
)

// guard narrows what the rules want of obj to what the operator's limits
// allow, as the write is decided (rules.WithinGuardrails): the configuration passed the
// same limits, but a release was never part of it, and the limits may have
// changed since metawatch last wrote the object. What it leaves is counted.
func (r *ruleReconciler) guard(ctx context.Context, key types.NamespacedName, obj *metav1.PartialObjectMetadata, mine owned, res rules.Result) rules.Result {
	res, left := r.guarded(obj, mine, res)
	counts := map[string]int{}
	for _, l := range left {
		counts[l.Reason]++
	}
	if r.audit.observeLeft(key, obj.UID, counts, left) && len(left) > 0 {
		logr.FromContextOrDiscard(ctx).Info("keys left as they are: the guardrails forbid writing them", "left", left)
		r.tellLeft(key, left)
	}
	return res
}

// tellLeft folds, per rule and guardrail, the keys left on the object
// keyed key into their aggregate Event.
func (r *ruleReconciler) tellLeft(key types.NamespacedName, left []rules.Left) {
	type ruleReason struct{ rule, reason string }
	keys := map[ruleReason][]string{}
	for _, l := range left {
		rr := ruleReason{l.Rule, l.Reason}
		keys[rr] = append(keys[rr], fmt.Sprintf("%s %s %s", l.Action, l.Map, l.Key))
	}
	for rr, ks := range keys {
		sort.Strings(ks)
		occur(r.wiring.Events, kindLabel(r.GVK), key, ReasonKeysLeft, "Guard", rr.rule, leftMessage(rr.rule, rr.reason), strings.Join(ks, ", "))
	}
}

// ownsKeys reports whether metawatch's field manager owns a key of obj:
// where nothing may be written to obj, such an object is still reconciled,
// to count its keys as left (metawatch_keys_left_by_guardrail).
func (r *ruleReconciler) ownsKeys(obj *metav1.PartialObjectMetadata) bool {
	mine := r.mine(obj)
	return mine.Labels.Len()+mine.Annotations.Len() > 0
}

// guarded is rules.WithinGuardrails of res on obj.
func (r *ruleReconciler) guarded(obj *metav1.PartialObjectMetadata, mine owned, res rules.Result) (rules.Result, []rules.Left) {
	owns := func(what config.MetadataMap, k string) bool {
		if what == config.Labels {
			return mine.Labels.Has(k)
		}
		return mine.Annotations.Has(k)
	}
	return rules.WithinGuardrails(res, r.Rules, rules.Metadata{Labels: obj.Labels, Annotations: obj.Annotations}, owns, &r.settings.Guardrails)
}

// leaveAll counts every key metawatch owns on obj as left for reason: the
// object's kind or namespace is outside what the limits let rules write, so
// nothing of it is written, not even a release.
func (r *ruleReconciler) leaveAll(ctx context.Context, key types.NamespacedName, obj *metav1.PartialObjectMetadata, mine owned, reason string) {
	n := mine.Labels.Len() + mine.Annotations.Len()
	counts := map[string]int{}
	var left []rules.Left
	if n > 0 {
		counts[reason] = n
		for _, k := range sets.List(mine.Labels) {
			left = append(left, rules.Left{Map: config.Labels, Key: k, Action: "release", Reason: reason})
		}
		for _, k := range sets.List(mine.Annotations) {
			left = append(left, rules.Left{Map: config.Annotations, Key: k, Action: "release", Reason: reason})
		}
	}
	if r.audit.observeLeft(key, obj.UID, counts, left) && n > 0 {
		logr.FromContextOrDiscard(ctx).Info("keys metawatch owns left as they are: the guardrails forbid writing this object", "reason", reason,
			"labels", sets.List(mine.Labels), "annotations", sets.List(mine.Annotations))
		r.tellLeft(key, left)
	}
}

// leftKeys is, per object of one kind, the keys left by each guardrail
// (metawatch_keys_left_by_guardrail); the audit's generation publishes it.
type leftKeys struct {
	mu      sync.Mutex
	objects map[types.NamespacedName]leftOn
	counts  map[string]int // reason → keys, over the objects
}

// leftOn is what is left on one object: its uid (whose bucket says which
// replica counts it, sharded) and, by reason, the keys.
type leftOn struct {
	uid    types.UID
	counts map[string]int
	keys   []rules.Left // which, for the reports
}

func newLeftKeys() *leftKeys {
	return &leftKeys{objects: map[types.NamespacedName]leftOn{}, counts: map[string]int{}}
}

// observeLeft records the keys left on the object named key, by reason, and
// reports whether that changed. Sharded, only the holder of the object's
// bucket counts it, as it is the one that audits and writes it.
func (a *audit) observeLeft(key types.NamespacedName, uid types.UID, now map[string]int, keys []rules.Left) bool {
	if !a.holds(uid) {
		now, keys = nil, nil
	}
	l := a.left
	l.mu.Lock()
	defer l.mu.Unlock()
	// Asked under the lock: Publish makes the audits live, then takes each
	// kind's lock to publish its counts, so an update either lands in the
	// counts before Publish reads them or reaches the gauge after.
	live := a.owner.isLive()
	before := l.objects[key].counts
	changed := len(before) != len(now)
	for reason, n := range now {
		if before[reason] != n {
			changed = true
			a.addLeft(reason, n-before[reason], live)
		}
	}
	for reason, n := range before {
		if _, still := now[reason]; !still {
			changed = true
			a.addLeft(reason, -n, live)
		}
	}
	if changed {
		a.owner.changes.Add(1)
	}
	if len(now) == 0 {
		delete(l.objects, key)
	} else {
		l.objects[key] = leftOn{uid: uid, counts: now, keys: keys}
	}
	return changed
}

// dropUnheldLeft stops counting the keys left on objects whose bucket this
// replica no longer holds: their new holder counts them.
func (a *audit) dropUnheldLeft() {
	a.left.mu.Lock()
	var gone []types.NamespacedName
	for key, on := range a.left.objects {
		if !a.holds(on.uid) {
			gone = append(gone, key)
		}
	}
	a.left.mu.Unlock()
	for _, key := range gone {
		a.observeLeft(key, "", nil, nil)
	}
}

func (a *audit) addLeft(reason string, delta int, live bool) {
	a.left.counts[reason] += delta
	if live {
		telemetry.KeysLeft.WithLabelValues(a.kind, reason).Add(float64(delta))
	}
}

// publishLeft sets metawatch_keys_left_by_guardrail from the counts (the
// caller reset it).
func (a *audit) publishLeft() {
	a.left.mu.Lock()
	defer a.left.mu.Unlock()
	for reason, n := range a.left.counts {
		if n > 0 {
			telemetry.KeysLeft.WithLabelValues(a.kind, reason).Set(float64(n))
		}
	}
}
