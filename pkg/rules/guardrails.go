package rules

import (
	"sort"

	"github.com/metawatch/metawatch/pkg/config"
)

// Guardrails are the operator's guardrails as one key meets them
// (*config.Guardrails): why writing it is forbidden, "" when it is allowed.
type Guardrails interface {
	// KeyRefusal is for a key a rule sets, copies or removes; optedIn are
	// the reserved keys the rule lists under reservedKeys.
	KeyRefusal(key string, optedIn []string) string
	// ReleaseRefusal is for a key metawatch owns that no rule wants.
	ReleaseRefusal(key string) string
}

// Left is a key metawatch leaves as it is because the guardrails forbid
// writing it.
type Left struct {
	Map config.MetadataMap `json:"map"`
	Key string             `json:"key"`
	// Action is what metawatch would otherwise have done: set, remove or release.
	Action string `json:"action"`
	// Rule wants the key set or removed; "" for a release (no rule wants it).
	Rule string `json:"rule,omitempty"`
	// Reason is the guardrail: config.RefusedProtected or config.RefusedReserved.
	Reason string `json:"reason"`
}

// WithinGuardrails narrows res, what rs want of an object whose labels and
// annotations are cur, to what l allows, at the moment the write is decided:
// the configuration passed the same limits when it was accepted, but a release
// (a key metawatch owns that no rule wants) was never part of it, and the
// limits of the process may have changed since metawatch last wrote the
// object. mine tells the keys metawatch's field manager owns.
//
//   - a key a rule wants that l forbids is not set; if metawatch owns it, it
//     is kept at its current value instead;
//   - a key to remove that l forbids is not removed;
//   - a key metawatch owns that no rule wants and l forbids to release is kept
//     at its current value: leaving it out of the apply would delete it.
//
// Kept keys are Owned with Keep set (no rule). Every key left is listed.
func WithinGuardrails(res Result, rs []Rule, cur Metadata, mine func(config.MetadataMap, string) bool, l Guardrails) (Result, []Left) {
	optedIn := map[string][]string{}
	for _, r := range rs {
		optedIn[r.Name] = r.ReservedKeys
	}
	var left []Left
	for _, m := range []struct {
		what    config.MetadataMap
		current map[string]string
		desired *map[string]Owned
		remove  *map[string]string
	}{{config.Labels, cur.Labels, &res.Labels, &res.RemoveLabels}, {config.Annotations, cur.Annotations, &res.Annotations, &res.RemoveAnnotations}} {
		owns := func(k string) bool { return mine(m.what, k) }
		var l1, l2, l3 []Left
		*m.desired, l1 = guardSets(m.what, *m.desired, m.current, owns, optedIn, l)
		*m.remove, l2 = guardRemoves(m.what, *m.remove, optedIn, l)
		*m.desired, l3 = guardReleases(m.what, *m.desired, *m.remove, m.current, owns, l)
		left = append(append(append(left, l1...), l2...), l3...)
	}
	sort.Slice(left, func(i, j int) bool {
		if left[i].Map != left[j].Map {
			return left[i].Map < left[j].Map
		}
		return left[i].Key < left[j].Key
	})
	return res, left
}

func guardSets(what config.MetadataMap, desired map[string]Owned, current map[string]string, owns func(string) bool, optedIn map[string][]string, l Guardrails) (map[string]Owned, []Left) {
	var left []Left
	out := desired
	for k, o := range desired {
		if o.Keep {
			continue
		}
		why := l.KeyRefusal(k, optedIn[o.Rule])
		if why == "" {
			continue
		}
		if len(left) == 0 {
			out = clone(desired)
		}
		left = append(left, Left{Map: what, Key: k, Action: "set", Rule: o.Rule, Reason: why})
		delete(out, k)
		if v, had := current[k]; had && owns(k) {
			out[k] = Owned{Value: v, Keep: true}
		}
	}
	return out, left
}

func guardRemoves(what config.MetadataMap, remove map[string]string, optedIn map[string][]string, l Guardrails) (map[string]string, []Left) {
	var left []Left
	out := remove
	for k, rule := range remove {
		why := l.KeyRefusal(k, optedIn[rule])
		if why == "" {
			continue
		}
		if len(left) == 0 {
			out = make(map[string]string, len(remove))
			for k2, r2 := range remove {
				out[k2] = r2
			}
		}
		left = append(left, Left{Map: what, Key: k, Action: "remove", Rule: rule, Reason: why})
		delete(out, k)
	}
	return out, left
}

// guardReleases keeps the keys metawatch owns that no rule wants or removes
// and that l forbids to release.
func guardReleases(what config.MetadataMap, desired map[string]Owned, remove map[string]string, current map[string]string, owns func(string) bool, l Guardrails) (map[string]Owned, []Left) {
	var left []Left
	out := desired
	for k, v := range current {
		_, wanted := desired[k]
		_, removed := remove[k]
		if wanted || removed || !owns(k) {
			continue
		}
		why := l.ReleaseRefusal(k)
		if why == "" {
			continue
		}
		if len(left) == 0 {
			out = clone(desired)
		}
		left = append(left, Left{Map: what, Key: k, Action: "release", Reason: why})
		out[k] = Owned{Value: v, Keep: true}
	}
	return out, left
}

func clone(m map[string]Owned) map[string]Owned {
	out := make(map[string]Owned, len(m)+1)
	for k, v := range m {
		out[k] = v
	}
	return out
}
