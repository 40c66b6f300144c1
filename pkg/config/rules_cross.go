package config

import (
	"fmt"
	"sort"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// write is one rule's intent for one label or annotation key.
type write struct {
	rule   int
	target MetadataMap
	key    string
	path   *field.Path
	op     action
	value  string // for actionSet
}

// agrees reports whether w and other leave the key the same way.
func (w write) agrees(other write) bool {
	return w.op == other.op && w.value == other.value && w.op != actionCopy && w.op != actionCopyOwner
}

func (w write) String() string {
	switch w.op {
	case actionSet:
		return fmt.Sprintf("sets it to %q", w.value)
	case actionRemove:
		return "removes it"
	case actionCopyOwner:
		return "copies it from the owner"
	}
	return "copies it from the namespace"
}

// writesOf lists a rule's writes, each with its metadata map and key.
func writesOf(i int, r Rule) []write {
	p := field.NewPath("rules").Index(i)
	var out []write
	add := func(target MetadataMap, key string, path *field.Path, op action, value string) {
		out = append(out, write{rule: i, target: target, key: key, path: path, op: op, value: value})
	}
	for k, v := range r.SetLabels {
		add(Labels, k, p.Child("setLabels").Key(k), actionSet, v)
	}
	for k, v := range r.SetAnnotations {
		add(Annotations, k, p.Child("setAnnotations").Key(k), actionSet, v)
	}
	for j, k := range r.RemoveLabels {
		add(Labels, k, p.Child("removeLabels").Index(j), actionRemove, "")
	}
	for j, k := range r.RemoveAnnotations {
		add(Annotations, k, p.Child("removeAnnotations").Index(j), actionRemove, "")
	}
	if c := r.CopyFromNamespace; c != nil {
		for j, k := range c.Labels {
			add(Labels, k, p.Child("copyFromNamespace", "labels").Index(j), actionCopy, "")
		}
		for j, k := range c.Annotations {
			add(Annotations, k, p.Child("copyFromNamespace", "annotations").Index(j), actionCopy, "")
		}
	}
	if c := r.CopyFromOwner; c != nil {
		for j, k := range c.Labels {
			add(Labels, k, p.Child("copyFromOwner", "labels").Index(j), actionCopyOwner, "")
		}
		for j, k := range c.Annotations {
			add(Annotations, k, p.Child("copyFromOwner", "annotations").Index(j), actionCopyOwner, "")
		}
	}
	sort.Slice(out, func(a, b int) bool { return out[a].path.String() < out[b].path.String() })
	return out
}

// validateConflicts rejects two rules that write the same key of the same kind
// differently: each would undo the other on every reconcile. That gives a key
// one source per object: a fixed value, the Namespace or the owner, never two
// (no order between sources to learn, and nothing that flips when one of them
// loses the key).
func validateConflicts(c *Config) field.ErrorList {
	var errs field.ErrorList
	seen := map[string]write{} // kind/map/key -> first write
	for i, r := range c.Rules {
		for _, w := range writesOf(i, r) {
			for _, kind := range r.KindNames() {
				id := kind + "/" + w.target.Plural() + "/" + w.key
				first, dup := seen[id]
				if !dup {
					seen[id] = w
					continue
				}
				if !first.agrees(w) {
					errs = append(errs, field.Invalid(w.path, w.key, fmt.Sprintf("rule %q %s on %s, but %s (rule %q) %s: one key must not be written two ways",
						r.Name, w, kind, first.path, c.Rules[first.rule].Name, first)))
				}
			}
		}
	}
	return errs
}

// validateLoops rejects a rule whose label writes would change whether an
// object matches its kind's watch selector (it would leave the cache, and come
// back when the write is undone) or the rule's own match (metawatch would drop
// the label it just set, then set it again).
func validateLoops(c *Config) field.ErrorList {
	watchSelectors := map[string]string{}
	for _, w := range c.Watches {
		watchSelectors[w.Kind] = w.LabelSelector
	}
	var errs field.ErrorList
	for i, r := range c.Rules {
		writes := map[string]write{}
		for _, w := range writesOf(i, r) {
			if w.target == Labels {
				writes[w.key] = w
			}
		}
		for _, kind := range r.KindNames() {
			errs = append(errs, loopErrors(writes, watchSelectors[kind], fmt.Sprintf("the %s watch's labelSelector", kind))...)
		}
		if r.Match != nil {
			errs = append(errs, loopErrors(writes, r.Match.LabelSelector, "the rule's own match.labelSelector")...)
		}
	}
	return errs
}

func loopErrors(writes map[string]write, selector, what string) field.ErrorList {
	sel, err := labels.Parse(selector)
	if err != nil {
		return nil // reported by Validate
	}
	reqs, _ := sel.Requirements()
	var errs field.ErrorList
	for _, req := range reqs {
		w, ok := writes[req.Key()]
		if ok && !stillMatches(req, w) {
			errs = append(errs, field.Invalid(w.path, req.Key(), fmt.Sprintf("the rule %s, which changes whether objects match %s %q: "+
				"metawatch would undo and redo it in a loop", w, what, selector)))
		}
	}
	return errs
}

// stillMatches reports whether req holds for every object after w.
func stillMatches(req labels.Requirement, w write) bool {
	switch w.op {
	case actionSet:
		return req.Matches(labels.Set{req.Key(): w.value})
	case actionRemove:
		return req.Matches(labels.Set{})
	}
	return false // a copied value is not known ahead, nor whether the namespace has the key
}
