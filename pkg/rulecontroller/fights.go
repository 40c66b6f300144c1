package rulecontroller

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/metawatch/metawatch/pkg/config"
	"github.com/metawatch/metawatch/pkg/ownership"
	"github.com/metawatch/metawatch/pkg/rules"
	"github.com/metawatch/metawatch/pkg/telemetry"
)

// noteUndone is called on every update event: a key metawatch set that
// something else removed, or a key a rule removes that something else put
// back, is one undo of metawatch's write; past a few on one object, the key
// is a fight there (memory_fights.go). A change this process's own writes
// made (its releases, its removals) is none, nor, sharded, a change to an
// object of a bucket another replica holds.
func (r *ruleReconciler) noteUndone(oldObj, newObj metav1.Object) {
	if r.settings.Identity.WroteVersion(newObj.GetUID(), newObj.GetResourceVersion()) {
		return
	}
	if r.holder != nil && !r.holder.Holds(newObj.GetUID()) {
		return // another replica writes it: its own releases are no undo
	}
	key := types.NamespacedName{Namespace: newObj.GetNamespace(), Name: newObj.GetName()}
	was := ownedKeys(oldObj, r.settings.Identity.FieldManager)
	for _, m := range []struct {
		what       config.MetadataMap
		owned      sets.Set[string]
		removed    sets.Set[string]
		before, is map[string]string
	}{
		{config.Labels, was.Labels, r.removes.Labels, oldObj.GetLabels(), newObj.GetLabels()},
		{config.Annotations, was.Annotations, r.removes.Annotations, oldObj.GetAnnotations(), newObj.GetAnnotations()},
	} {
		for k := range m.owned {
			if _, still := m.is[k]; !still {
				r.undone(key, m.what, k) // metawatch set it; something removed it
			}
		}
		for k := range m.removed {
			_, had := m.before[k]
			if _, has := m.is[k]; has && !had {
				r.undone(key, m.what, k) // a rule removes it; something put it back
			}
		}
	}
}

func (r *ruleReconciler) undone(key types.NamespacedName, what config.MetadataMap, k string) {
	r.memory.fights.undone(key, what, k, r.memory.takeovers.add(key, what, k))
}

// withoutFights is res without the keys metawatch leaves to a fight on obj:
// not set (unless metawatch still owns the key: leaving it out of the apply
// would release it) and not removed; until is when the first round of them
// ends (zero: none). The first decision of each round says so: an
// OwnershipFight Event and the metric.
func (r *ruleReconciler) withoutFights(obj *metav1.PartialObjectMetadata, mine owned, res rules.Result) (_ rules.Result, until time.Time) {
	leave := func(u time.Time) bool {
		if !u.IsZero() && (until.IsZero() || u.Before(until)) {
			until = u
		}
		return !u.IsZero()
	}
	key := types.NamespacedName{Namespace: obj.Namespace, Name: obj.Name}
	for _, m := range []struct {
		what    config.MetadataMap
		owned   sets.Set[string]
		desired map[string]rules.Owned
		removes map[string]string
	}{
		{config.Labels, mine.Labels, res.Labels, res.RemoveLabels},
		{config.Annotations, mine.Annotations, res.Annotations, res.RemoveAnnotations},
	} {
		for k, o := range m.desired {
			if u, first := r.memory.fights.leaves(key, m.what, k); !m.owned.Has(k) && leave(u) {
				delete(m.desired, k)
				r.tellFight(obj, first, o.Rule, m.what, k, "sets", "removed")
			}
		}
		for k, rule := range m.removes {
			if u, first := r.memory.fights.leaves(key, m.what, k); leave(u) {
				delete(m.removes, k)
				r.tellFight(obj, first, rule, m.what, k, "removes", "put back")
			}
		}
	}
	return res, until
}

// tellFight says, once per round, that metawatch leaves key on obj.
func (r *ruleReconciler) tellFight(obj *metav1.PartialObjectMetadata, first bool, rule string, what config.MetadataMap, key, does, undo string) {
	if !first {
		return
	}
	telemetry.OwnershipFights.WithLabelValues(rule, kindLabel(r.GVK)).Inc()
	occur(r.wiring.Events, kindLabel(r.GVK), types.NamespacedName{Namespace: obj.Namespace, Name: obj.Name}, ReasonOwnershipFight, "Apply", rule, undoFightMessage(rule),
		fmt.Sprintf("%s %s %s, %s", does, what, key, undo))
}

// noteForeignApply is called on every update event: a change to the keys
// of metawatch's field manager that no write of this process made and that
// no rule of this configuration could make is another writer applying as
// the same name (Identity): a key the name's entry gained that no rule
// writes, or a key a rule sets to a fixed value whose value changed to
// another. Anything a rule could make is no evidence, whatever it is now: a
// copied value follows its source, which may have moved on since this
// process (or, sharded, the replica that held the object's bucket then)
// wrote it. Sharded, only objects whose bucket this replica holds count:
// its cache follows buckets before it holds them, and sees the writes of
// the replica that still does.
func (r *ruleReconciler) noteForeignApply(oldObj, newObj client.Object) {
	if r.settings.Identity.WroteVersion(newObj.GetUID(), newObj.GetResourceVersion()) {
		return
	}
	if r.holder != nil && !r.holder.Holds(newObj.GetUID()) {
		return
	}
	adopted := ownedKeys(oldObj, r.settings.Identity.Adopted)
	for _, c := range appliedChanges(oldObj, newObj, r.settings.Identity.FieldManager) {
		if r.couldWrite(c) || (c.what == config.Labels && adopted.Labels.Has(c.key)) || (c.what == config.Annotations && adopted.Annotations.Has(c.key)) {
			continue
		}
		r.settings.Identity.ForeignApply(fmt.Sprintf("%s %s: %s %s=%q", kindLabel(r.GVK), client.ObjectKeyFromObject(newObj), c.what, c.key, c.value))
		return
	}
}

// couldWrite reports whether a rule of the kind could have applied c: it
// copies the key (any value), or sets it to c's value.
func (r *ruleReconciler) couldWrite(c appliedChange) bool {
	fixed, copied := r.writes.fixed.Labels, r.writes.copied.Labels
	if c.what == config.Annotations {
		fixed, copied = r.writes.fixed.Annotations, r.writes.copied.Annotations
	}
	if copied.Has(c.key) {
		return true
	}
	for _, v := range fixed[c.key] {
		if v == c.value {
			return true
		}
	}
	return false
}

// ruleWrites are the keys the rules of a kind write: those set to fixed
// values (every value a rule sets), and those copied (any value).
type ruleWrites struct {
	fixed  struct{ Labels, Annotations map[string][]string }
	copied ownership.Keys
}

// writesOf is what rs write.
func writesOf(rs []rules.Rule) ruleWrites {
	w := ruleWrites{copied: ownership.NewKeys()}
	w.fixed.Labels, w.fixed.Annotations = map[string][]string{}, map[string][]string{}
	for _, r := range rs {
		for k, v := range r.SetLabels {
			w.fixed.Labels[k] = append(w.fixed.Labels[k], v)
		}
		for k, v := range r.SetAnnotations {
			w.fixed.Annotations[k] = append(w.fixed.Annotations[k], v)
		}
		w.copied.Labels.Insert(r.CopyLabels...)
		w.copied.Labels.Insert(r.OwnerLabels...)
		w.copied.Annotations.Insert(r.CopyAnnotations...)
		w.copied.Annotations.Insert(r.OwnerAnnotations...)
	}
	return w
}

// appliedChange is a key whose value an apply as the field manager set.
type appliedChange struct {
	what       config.MetadataMap
	key, value string
}

// appliedChanges are the keys manager's entry owns after that it did not
// before, and those it owns both times with another value: only an apply
// as manager makes either.
func appliedChanges(oldObj, newObj metav1.Object, manager string) []appliedChange {
	was, is := ownedKeys(oldObj, manager), ownedKeys(newObj, manager)
	var out []appliedChange
	for _, m := range []struct {
		what        config.MetadataMap
		was, is     sets.Set[string]
		before, now map[string]string
	}{
		{config.Labels, was.Labels, is.Labels, oldObj.GetLabels(), newObj.GetLabels()},
		{config.Annotations, was.Annotations, is.Annotations, oldObj.GetAnnotations(), newObj.GetAnnotations()},
	} {
		for k := range m.is {
			v, has := m.now[k]
			if !has {
				continue
			}
			if old, had := m.before[k]; !m.was.Has(k) || !had || old != v {
				out = append(out, appliedChange{what: m.what, key: k, value: v})
			}
		}
	}
	return out
}
