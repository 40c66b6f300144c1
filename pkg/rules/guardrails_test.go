package rules_test

import (
	"maps"
	"reflect"
	"slices"
	"testing"

	"github.com/metawatch/metawatch/pkg/config"
	"github.com/metawatch/metawatch/pkg/rules"
	"github.com/metawatch/metawatch/pkg/testing/testkit"
)

// owning is metawatch's field manager owning keys.
func owning(keys ...string) func(config.MetadataMap, string) bool {
	return func(_ config.MetadataMap, k string) bool { return slices.Contains(keys, k) }
}

// keyRule is a rule that writes keys of one key type: set and remove
// become setLabels and removeLabels, or setAnnotations and removeAnnotations.
type keyRule struct {
	name             string
	set              map[string]string
	remove, reserved []string
}

func (r keyRule) of(kt testkit.KeyType) rules.Rule {
	out := rules.Rule{Name: r.name, ReservedKeys: r.reserved}
	if kt.Field == "labels" {
		out.SetLabels, out.RemoveLabels = r.set, r.remove
	} else {
		out.SetAnnotations, out.RemoveAnnotations = r.set, r.remove
	}
	return out
}

// metadataMap is kt's config.MetadataMap.
func metadataMap(kt testkit.KeyType) config.MetadataMap {
	if kt.Field == "labels" {
		return config.Labels
	}
	return config.Annotations
}

// WithinGuardrails holds every guardrail for labels and annotations alike: each case
// runs once with its keys as labels, once as annotations.
func TestWithinGuardrails(t *testing.T) {
	limits := config.DefaultGuardrails()
	limits.AllowedReservedKeys = []string{"topology.kubernetes.io/zone"}
	setRule := keyRule{name: "set", set: map[string]string{"team": "a"}}
	cases := map[string]struct {
		rules  []keyRule
		keys   map[string]string // the object's, of the key type
		mine   []string
		want   map[string]rules.Owned
		remove map[string]string
		left   []rules.Left // Map is the key type's
	}{
		"a key no rule wants and no guardrail protects is released (left out of the apply)": {
			rules: []keyRule{setRule}, keys: map[string]string{"team": "a", "old": "x"}, mine: []string{"team", "old"},
			want: map[string]rules.Owned{"team": {Value: "a", Rule: "set"}},
		},
		"a protected key metawatch owns that no rule wants is kept at its value, not released": {
			rules: []keyRule{setRule}, keys: map[string]string{"team": "a", "pod-template-hash": "abc"}, mine: []string{"team", "pod-template-hash"},
			want: map[string]rules.Owned{"team": {Value: "a", Rule: "set"}, "pod-template-hash": {Value: "abc", Keep: true}},
			left: []rules.Left{{Key: "pod-template-hash", Action: "release", Reason: config.RefusedProtected}},
		},
		"a protected key another manager owns is not ours to release or keep": {
			rules: []keyRule{setRule}, keys: map[string]string{"team": "a", "pod-template-hash": "abc"}, mine: []string{"team"},
			want: map[string]rules.Owned{"team": {Value: "a", Rule: "set"}},
		},
		"a reserved key metawatch owns is kept unless --allowed-reserved-keys allows it": {
			keys: map[string]string{"example.kubernetes.io/x": "1", "topology.kubernetes.io/zone": "z"}, mine: []string{"example.kubernetes.io/x", "topology.kubernetes.io/zone"},
			want: map[string]rules.Owned{"example.kubernetes.io/x": {Value: "1", Keep: true}},
			left: []rules.Left{{Key: "example.kubernetes.io/x", Action: "release", Reason: config.RefusedReserved}},
		},
		"a set of a protected key is not made, and the key metawatch owns stays as it is": {
			rules: []keyRule{{name: "bad", set: map[string]string{"pod-template-hash": "new"}}},
			keys:  map[string]string{"pod-template-hash": "abc"}, mine: []string{"pod-template-hash"},
			want: map[string]rules.Owned{"pod-template-hash": {Value: "abc", Keep: true}},
			left: []rules.Left{{Key: "pod-template-hash", Action: "set", Rule: "bad", Reason: config.RefusedProtected}},
		},
		"a set of a reserved key the rule opts in to and the operator allows is made": {
			rules: []keyRule{{name: "zone", set: map[string]string{"topology.kubernetes.io/zone": "z"}, reserved: []string{"topology.kubernetes.io/zone"}}},
			keys:  map[string]string{},
			want:  map[string]rules.Owned{"topology.kubernetes.io/zone": {Value: "z", Rule: "zone"}},
		},
		"a set of a reserved key the rule does not opt in to is not made": {
			rules: []keyRule{{name: "zone", set: map[string]string{"topology.kubernetes.io/zone": "z"}}},
			keys:  map[string]string{},
			want:  map[string]rules.Owned{},
			left:  []rules.Left{{Key: "topology.kubernetes.io/zone", Action: "set", Rule: "zone", Reason: config.RefusedReserved}},
		},
		"a remove of a protected key is not made": {
			rules: []keyRule{{name: "rm", remove: []string{"app.kubernetes.io/managed-by", "tmp"}}},
			keys:  map[string]string{"app.kubernetes.io/managed-by": "helm", "tmp": "1"},
			want:  map[string]rules.Owned{}, remove: map[string]string{"tmp": "rm"},
			left: []rules.Left{{Key: "app.kubernetes.io/managed-by", Action: "remove", Rule: "rm", Reason: config.RefusedProtected}},
		},
	}
	for typeName, kt := range testkit.KeyTypes {
		t.Run(typeName, func(t *testing.T) {
			for name, tc := range cases {
				t.Run(name, func(t *testing.T) {
					var rs []rules.Rule
					for _, r := range tc.rules {
						rs = append(rs, r.of(kt))
					}
					var obj rules.Metadata
					if kt.Field == "labels" {
						obj.Labels = tc.keys
					} else {
						obj.Annotations = tc.keys
					}
					var wantLeft []rules.Left
					for _, l := range tc.left {
						l.Map = metadataMap(kt)
						wantLeft = append(wantLeft, l)
					}
					if tc.remove == nil {
						tc.remove = map[string]string{}
					}
					mine := owning(tc.mine...)
					owns := func(m config.MetadataMap, k string) bool { return m == metadataMap(kt) && mine(m, k) }
					res := rules.Evaluate(rs, obj, rules.Sources{})
					got, left := rules.WithinGuardrails(res, rs, obj, owns, &limits)
					desired, removes := got.Labels, got.RemoveLabels
					others := len(got.Annotations) + len(got.RemoveAnnotations)
					if kt.Field == "annotations" {
						desired, removes = got.Annotations, got.RemoveAnnotations
						others = len(got.Labels) + len(got.RemoveLabels)
					}
					if !reflect.DeepEqual(desired, tc.want) || !reflect.DeepEqual(removes, tc.remove) || !reflect.DeepEqual(left, wantLeft) || others > 0 {
						t.Errorf("WithinGuardrails:\n got %ss %v, removes %v, left %v (and of the other key type: %v)\nwant %ss %v, removes %v, left %v",
							kt.Name, desired, removes, left, got, kt.Name, tc.want, tc.remove, wantLeft)
					}
				})
			}
		})
	}
}

// FuzzWithinGuardrails checks WithinGuardrails's promises for any object, rules and limits: what
// it lets through is allowed (every set, remove and release), a key it keeps
// holds its current value, it allows everything when no guardrail is set,
// it leaves the input as it was, and guarding twice changes nothing more.
func FuzzWithinGuardrails(f *testing.F) {
	f.Add("team=a,pod-template-hash=x,kubernetes.io/os=linux", "team,pod-template-hash", "pod-template-hash=y,extra=1", "tmp,kubernetes.io/os", "pod-template-hash,kubernetes.io/*")
	f.Add("", "", "", "", "")
	f.Fuzz(func(t *testing.T, objLabels, mine, sets, removes, protected string) {
		obj := rules.Metadata{Labels: parseSet(objLabels)}
		// Both rules opt in to every reserved key they write; the operator
		// allows none (the default) or every one (open).
		setKeys := slices.Collect(maps.Keys(parseSet(sets)))
		rs := []rules.Rule{{Name: "set", SetLabels: parseSet(sets), ReservedKeys: setKeys}, {Name: "rm", RemoveLabels: splitKeys(removes), ReservedKeys: splitKeys(removes)}}
		limits := config.Guardrails{ProtectedKeys: splitKeys(protected)}
		open := config.Guardrails{AllowedReservedKeys: []string{"*"}}
		owns := owning(splitKeys(mine)...)
		res := rules.Evaluate(rs, obj, rules.Sources{})
		before := cloneResult(res)
		got, _ := rules.WithinGuardrails(res, rs, obj, owns, &limits)
		if !reflect.DeepEqual(res, before) {
			t.Fatalf("WithinGuardrails changed its input: %v, was %v", res, before)
		}
		for k, o := range got.Labels {
			switch {
			case o.Keep && o.Value != obj.Labels[k]:
				t.Errorf("kept %s at %q, the object has %q", k, o.Value, obj.Labels[k])
			case !o.Keep && limits.KeyRefusal(k, setKeys) != "":
				t.Errorf("lets rule %s set %s, which the limits refuse", o.Rule, k)
			}
		}
		for k := range got.RemoveLabels {
			if limits.KeyRefusal(k, splitKeys(removes)) != "" {
				t.Errorf("lets %s be removed, which the limits refuse", k)
			}
		}
		for k := range obj.Labels {
			_, kept := got.Labels[k]
			_, removed := got.RemoveLabels[k]
			if owns(config.Labels, k) && !kept && !removed && limits.ReleaseRefusal(k) != "" {
				t.Errorf("releases %s, which the limits refuse", k)
			}
		}
		again, left := rules.WithinGuardrails(got, rs, obj, owns, &limits)
		if !reflect.DeepEqual(again, got) {
			t.Errorf("guarding twice changed the result: %v, then %v", got, again)
		}
		if len(left) > 0 {
			t.Errorf("guarding twice left more: %v", left)
		}
		if opened, openLeft := rules.WithinGuardrails(res, rs, obj, owns, &open); !reflect.DeepEqual(opened, res) || len(openLeft) > 0 {
			t.Errorf("with no guardrail the result changed: %v, left %v", opened, openLeft)
		}
	})
}

func cloneResult(r rules.Result) rules.Result {
	return rules.Result{Labels: maps.Clone(r.Labels), Annotations: maps.Clone(r.Annotations), RemoveLabels: maps.Clone(r.RemoveLabels),
		RemoveAnnotations: maps.Clone(r.RemoveAnnotations), Violations: r.Violations}
}
