package rules_test

import (
	"maps"
	"reflect"
	"slices"
	"testing"

	"github.com/metawatch/metawatch/pkg/config"
	"github.com/metawatch/metawatch/pkg/rules"
)

// owning is metawatch's field manager owning keys.
func owning(keys ...string) func(config.MetadataMap, string) bool {
	return func(_ config.MetadataMap, k string) bool { return slices.Contains(keys, k) }
}

func TestGuard(t *testing.T) {
	limits := config.DefaultLimits()
	limits.AllowedReservedKeys = []string{"topology.kubernetes.io/zone"}
	setRule := rules.Rule{Name: "set", SetLabels: map[string]string{"team": "a"}}
	for name, tc := range map[string]struct {
		rules  []rules.Rule
		labels map[string]string
		mine   []string
		want   map[string]rules.Owned
		remove map[string]string
		left   []rules.Left
	}{
		"a key no rule wants and no guardrail protects is released (left out of the apply)": {
			rules: []rules.Rule{setRule}, labels: map[string]string{"team": "a", "old": "x"}, mine: []string{"team", "old"},
			want: map[string]rules.Owned{"team": {Value: "a", Rule: "set"}},
		},
		"a protected key metawatch owns that no rule wants is kept at its value, not released": {
			rules: []rules.Rule{setRule}, labels: map[string]string{"team": "a", "pod-template-hash": "abc"}, mine: []string{"team", "pod-template-hash"},
			want: map[string]rules.Owned{"team": {Value: "a", Rule: "set"}, "pod-template-hash": {Value: "abc", Keep: true}},
			left: []rules.Left{{Map: config.Labels, Key: "pod-template-hash", Action: "release", Reason: config.RefusedProtected}},
		},
		"a protected key another manager owns is not ours to release or keep": {
			rules: []rules.Rule{setRule}, labels: map[string]string{"team": "a", "pod-template-hash": "abc"}, mine: []string{"team"},
			want: map[string]rules.Owned{"team": {Value: "a", Rule: "set"}},
		},
		"a reserved key metawatch owns is kept unless --allowed-reserved-keys allows it": {
			labels: map[string]string{"example.kubernetes.io/x": "1", "topology.kubernetes.io/zone": "z"}, mine: []string{"example.kubernetes.io/x", "topology.kubernetes.io/zone"},
			want: map[string]rules.Owned{"example.kubernetes.io/x": {Value: "1", Keep: true}},
			left: []rules.Left{{Map: config.Labels, Key: "example.kubernetes.io/x", Action: "release", Reason: config.RefusedReserved}},
		},
		"a set of a protected key is not made, and the key metawatch owns stays as it is": {
			rules:  []rules.Rule{{Name: "bad", SetLabels: map[string]string{"pod-template-hash": "new"}}},
			labels: map[string]string{"pod-template-hash": "abc"}, mine: []string{"pod-template-hash"},
			want: map[string]rules.Owned{"pod-template-hash": {Value: "abc", Keep: true}},
			left: []rules.Left{{Map: config.Labels, Key: "pod-template-hash", Action: "set", Rule: "bad", Reason: config.RefusedProtected}},
		},
		"a set of a reserved key the rule opts in to and the operator allows is made": {
			rules:  []rules.Rule{{Name: "zone", SetLabels: map[string]string{"topology.kubernetes.io/zone": "z"}, ReservedKeys: []string{"topology.kubernetes.io/zone"}}},
			labels: map[string]string{},
			want:   map[string]rules.Owned{"topology.kubernetes.io/zone": {Value: "z", Rule: "zone"}},
		},
		"a set of a reserved key the rule does not opt in to is not made": {
			rules:  []rules.Rule{{Name: "zone", SetLabels: map[string]string{"topology.kubernetes.io/zone": "z"}}},
			labels: map[string]string{},
			want:   map[string]rules.Owned{},
			left:   []rules.Left{{Map: config.Labels, Key: "topology.kubernetes.io/zone", Action: "set", Rule: "zone", Reason: config.RefusedReserved}},
		},
		"a remove of a protected key is not made": {
			rules:  []rules.Rule{{Name: "rm", RemoveLabels: []string{"app.kubernetes.io/managed-by", "tmp"}}},
			labels: map[string]string{"app.kubernetes.io/managed-by": "helm", "tmp": "1"},
			want:   map[string]rules.Owned{}, remove: map[string]string{"tmp": "rm"},
			left: []rules.Left{{Map: config.Labels, Key: "app.kubernetes.io/managed-by", Action: "remove", Rule: "rm", Reason: config.RefusedProtected}},
		},
	} {
		t.Run(name, func(t *testing.T) {
			obj := rules.Metadata{Labels: tc.labels}
			res := rules.Evaluate(tc.rules, obj, rules.Sources{})
			got, left := rules.Guard(res, tc.rules, obj, owning(tc.mine...), &limits)
			if tc.remove == nil {
				tc.remove = map[string]string{}
			}
			if !reflect.DeepEqual(got.Labels, tc.want) || !reflect.DeepEqual(got.RemoveLabels, tc.remove) || !reflect.DeepEqual(left, tc.left) {
				t.Errorf("Guard:\n got labels %v, removes %v, left %v\nwant labels %v, removes %v, left %v", got.Labels, got.RemoveLabels, left, tc.want, tc.remove, tc.left)
			}
		})
	}
}

// FuzzGuard checks Guard's promises for any object, rules and limits: what
// it lets through is allowed (every set, remove and release), a key it keeps
// holds its current value, it allows everything when no guardrail is set,
// it leaves the input as it was, and guarding twice changes nothing more.
func FuzzGuard(f *testing.F) {
	f.Add("team=a,pod-template-hash=x,kubernetes.io/os=linux", "team,pod-template-hash", "pod-template-hash=y,extra=1", "tmp,kubernetes.io/os", "pod-template-hash,kubernetes.io/*")
	f.Add("", "", "", "", "")
	f.Fuzz(func(t *testing.T, objLabels, mine, sets, removes, protected string) {
		obj := rules.Metadata{Labels: parseSet(objLabels)}
		// Both rules opt in to every reserved key they write; the operator
		// allows none (the default) or every one (open).
		setKeys := slices.Collect(maps.Keys(parseSet(sets)))
		rs := []rules.Rule{{Name: "set", SetLabels: parseSet(sets), ReservedKeys: setKeys}, {Name: "rm", RemoveLabels: splitKeys(removes), ReservedKeys: splitKeys(removes)}}
		limits := config.Limits{ProtectedKeys: splitKeys(protected)}
		open := config.Limits{AllowedReservedKeys: []string{"*"}}
		owns := owning(splitKeys(mine)...)
		res := rules.Evaluate(rs, obj, rules.Sources{})
		before := cloneResult(res)
		got, _ := rules.Guard(res, rs, obj, owns, &limits)
		if !reflect.DeepEqual(res, before) {
			t.Fatalf("Guard changed its input: %v, was %v", res, before)
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
		again, left := rules.Guard(got, rs, obj, owns, &limits)
		if !reflect.DeepEqual(again, got) {
			t.Errorf("guarding twice changed the result: %v, then %v", got, again)
		}
		if len(left) > 0 {
			t.Errorf("guarding twice left more: %v", left)
		}
		if opened, openLeft := rules.Guard(res, rs, obj, owns, &open); !reflect.DeepEqual(opened, res) || len(openLeft) > 0 {
			t.Errorf("with no guardrail the result changed: %v, left %v", opened, openLeft)
		}
	})
}

func cloneResult(r rules.Result) rules.Result {
	return rules.Result{Labels: maps.Clone(r.Labels), Annotations: maps.Clone(r.Annotations), RemoveLabels: maps.Clone(r.RemoveLabels),
		RemoveAnnotations: maps.Clone(r.RemoveAnnotations), Violations: r.Violations}
}
