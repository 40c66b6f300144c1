package rulecontroller

import (
	"reflect"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/metawatch/metawatch/pkg/config"
	"github.com/metawatch/metawatch/pkg/rules"
)

// A key undone more than maxTakeovers times within the window is left for
// fightBackoff; a try after it that is undone again leaves it twice as
// long; a try that sticks ends the fight a window later.
func TestFightsBackOffAndEnd(t *testing.T) {
	now := time.Unix(0, 0)
	f := newFights()
	f.now = func() time.Time { return now }
	obj := types.NamespacedName{Namespace: "ns", Name: "p"}
	for count := 1; count <= maxTakeovers; count++ {
		if f.undone(obj, config.Labels, "team", count) {
			t.Fatalf("a fight after %d undos, want one only past %d", count, maxTakeovers)
		}
	}
	if !f.undone(obj, config.Labels, "team", maxTakeovers+1) {
		t.Fatal("no fight past maxTakeovers undos")
	}
	if until, first := f.leaves(obj, config.Labels, "team"); !until.Equal(now.Add(fightBackoff)) || !first {
		t.Fatalf("leaves = %v, %v; want left for fightBackoff, and said first", until, first)
	}
	if _, first := f.leaves(obj, config.Labels, "team"); first {
		t.Error("said twice in one round")
	}
	if until, _ := f.leaves(obj, config.Annotations, "team"); !until.IsZero() {
		t.Error("an annotation of the same name is left too: labels and annotations are apart")
	}
	now = now.Add(fightBackoff)
	if until, _ := f.leaves(obj, config.Labels, "team"); !until.IsZero() {
		t.Fatal("still left after the backoff: no try")
	}
	if !f.undone(obj, config.Labels, "team", 1) { // the try was undone again
		t.Fatal("an undone try did not begin a round")
	}
	now = now.Add(fightBackoff)
	if until, _ := f.leaves(obj, config.Labels, "team"); until.IsZero() {
		t.Error("the second round is as short as the first, want twice as long")
	}
	now = now.Add(fightBackoff + takeoverWindow + time.Second) // the next try stuck
	f.leaves(obj, config.Labels, "team")
	if len(f.items) != 0 {
		t.Errorf("a fight whose try stuck for a window is still remembered: %v", f.items)
	}
}

// Only an apply as the field manager changes what its entry owns: a key it
// gained, or an owned key's new value. A value another manager took is no
// apply of the name.
func TestAppliedChanges(t *testing.T) {
	entry := func(fields string) []metav1.ManagedFieldsEntry {
		return []metav1.ManagedFieldsEntry{{Manager: "metawatch", Operation: metav1.ManagedFieldsOperationApply, FieldsV1: metav1.NewFieldsV1(fields)}}
	}
	obj := func(labels, annotations map[string]string, fields string) *metav1.PartialObjectMetadata {
		return &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Labels: labels, Annotations: annotations, ManagedFields: entry(fields)}}
	}
	owns := `{"f:metadata":{"f:labels":{"f:team":{}},"f:annotations":{"f:example.com/a":{}}}}`
	before := obj(map[string]string{"team": "a"}, map[string]string{"example.com/a": "1"}, owns)
	cases := map[string]struct {
		after *metav1.PartialObjectMetadata
		want  []appliedChange
	}{
		"nothing changed": {after: before},
		"a label gained": {after: obj(map[string]string{"team": "a", "tier": "x"}, map[string]string{"example.com/a": "1"},
			`{"f:metadata":{"f:labels":{"f:team":{},"f:tier":{}},"f:annotations":{"f:example.com/a":{}}}}`),
			want: []appliedChange{{what: config.Labels, key: "tier", value: "x"}}},
		"an owned annotation's value changed": {after: obj(map[string]string{"team": "a"}, map[string]string{"example.com/a": "2"}, owns),
			want: []appliedChange{{what: config.Annotations, key: "example.com/a", value: "2"}}},
		"a key lost to another manager": {after: obj(map[string]string{"team": "b"}, map[string]string{"example.com/a": "1"},
			`{"f:metadata":{"f:annotations":{"f:example.com/a":{}}}}`)},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			if got := appliedChanges(before, c.after, "metawatch"); !reflect.DeepEqual(got, c.want) {
				t.Errorf("appliedChanges = %+v, want %+v", got, c.want)
			}
		})
	}
}

// What a rule could have applied is no evidence of another writer: a copied
// key whatever its value (its source may have moved on since), a key set
// to a fixed value at that value; a key no rule writes, or a fixed key at
// another value, is.
func TestOnlyWhatNoRuleCouldWriteIsAnotherWriters(t *testing.T) {
	r := &ruleReconciler{writes: writesOf([]rules.Rule{
		{Name: "team", CopyLabels: []string{"team"}, OwnerAnnotations: []string{"example.com/cost"}},
		{Name: "tier", SetLabels: map[string]string{"tier": "gold"}, SetAnnotations: map[string]string{"example.com/by": "metawatch"}},
	})}
	cases := map[string]struct {
		change appliedChange
		could  bool
	}{
		"a copied label, any value":                      {appliedChange{config.Labels, "team", "anything"}, true},
		"an annotation copied from the owner, any value": {appliedChange{config.Annotations, "example.com/cost", "x"}, true},
		"a set label at its value":                       {appliedChange{config.Labels, "tier", "gold"}, true},
		"a set label at another value":                   {appliedChange{config.Labels, "tier", "silver"}, false},
		"a set annotation at another value":              {appliedChange{config.Annotations, "example.com/by", "someone"}, false},
		"a label no rule writes":                         {appliedChange{config.Labels, "example.com/team-b", "yes"}, false},
		"a label set, but asked as an annotation":        {appliedChange{config.Annotations, "tier", "gold"}, false},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			if got := r.couldWrite(c.change); got != c.could {
				t.Errorf("couldWrite(%+v) = %v, want %v", c.change, got, c.could)
			}
		})
	}
}
