package rulecontroller

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/metawatch/metawatch/pkg/authority"
	"github.com/metawatch/metawatch/pkg/settings"
	"github.com/metawatch/metawatch/pkg/telemetry"
	"github.com/metawatch/metawatch/pkg/testing/testkit"
)

// planAdoption, for the old name's labels and its annotations alike.
func TestPlanAdoption(t *testing.T) {
	began := time.Date(2026, 11, 26, 3, 0, 0, 0, time.UTC)
	// Each case's fields are its entry's, with %[1]s for the map of the key
	// type ("f:labels" or "f:annotations").
	const keysAB = `{"f:metadata":{%[1]q:{".":{},"f:a":{},"f:b":{}}}}`
	cases := map[string]struct {
		manager    string
		at         time.Time
		fields     string
		update     bool // an Update entry, not an Apply
		wantOK     bool
		wantTake   []string
		wantKeep   []string
		wantRefuse string
	}{
		"the old name's keys are taken, the protected one kept": {
			manager: "old", at: began.Add(-time.Hour), fields: `{"f:metadata":{%[1]q:{"f:a":{},"f:guarded":{}}}}`,
			wantOK: true, wantTake: []string{"a"}, wantKeep: []string{"guarded"},
		},
		"a key the object no longer has is neither taken nor kept": {
			manager: "old", at: began.Add(-time.Hour), fields: `{"f:metadata":{%[1]q:{"f:a":{},"f:gone":{}}}}`,
			wantOK: true, wantTake: []string{"a"},
		},
		"no entry of the old name: nothing to do": {
			manager: "someone", at: began, fields: keysAB,
		},
		"only protected keys: nothing to take": {
			manager: "old", at: began, fields: `{"f:metadata":{%[1]q:{"f:guarded":{}}}}`,
		},
		"an apply after adoption began and its slack is a live writer's": {
			manager: "old", at: began.Add(liveWriterSlack + time.Second), fields: keysAB,
			wantOK: true, wantTake: []string{"a", "b"}, wantRefuse: telemetry.AdoptionLive,
		},
		"an apply within the slack is the old installation's last": {
			manager: "old", at: began.Add(liveWriterSlack), fields: keysAB,
			wantOK: true, wantTake: []string{"a", "b"},
		},
		"an old name that owns the spec too is refused": {
			manager: "old", at: began.Add(-time.Hour), fields: `{"f:metadata":{%[1]q:{"f:a":{}}},"f:spec":{"f:replicas":{}}}`,
			wantOK: true, wantTake: []string{"a"}, wantRefuse: telemetry.AdoptionOtherFields,
		},
		"an old name that owns a finalizer is refused": {
			manager: "old", at: began.Add(-time.Hour), fields: `{"f:metadata":{"f:finalizers":{},%[1]q:{"f:a":{}}}}`,
			wantOK: true, wantTake: []string{"a"}, wantRefuse: telemetry.AdoptionOtherFields,
		},
		"the old name's update entry is not an apply: nothing to do": {
			manager: "old", at: began, fields: keysAB, update: true,
		},
	}
	for typeName, kt := range testkit.KeyTypes {
		t.Run(typeName, func(t *testing.T) {
			for name, tc := range cases {
				t.Run(name, func(t *testing.T) {
					s := settings.Defaults()
					s.Identity = authority.NewIdentity("", "old")
					s.Guardrails.ProtectedKeys = []string{"guarded"}
					r := &ruleReconciler{GVK: corev1.SchemeGroupVersion.WithKind("Pod"), settings: &s,
						adoptionBegan: func() time.Time { return began }}
					when := metav1.NewTime(tc.at)
					entry := metav1.ManagedFieldsEntry{Manager: tc.manager, Operation: metav1.ManagedFieldsOperationApply, Time: &when,
						FieldsV1: metav1.NewFieldsV1(fmt.Sprintf(tc.fields, "f:"+kt.Field))}
					if tc.update {
						entry.Operation = metav1.ManagedFieldsOperationUpdate
					}
					obj := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", ManagedFields: []metav1.ManagedFieldsEntry{entry}}}
					setKeys(kt, obj, map[string]string{"a": "1", "b": "2", "guarded": "3"})
					p, ok := r.planAdoption(obj)
					if ok != tc.wantOK {
						t.Fatalf("planned %v, want %v", ok, tc.wantOK)
					}
					if !ok {
						return
					}
					if got := sets.List(keysOf(kt, p.take)); !sameKeys(got, tc.wantTake) || !othersEmpty(kt, p.take) {
						t.Errorf("takes %v (labels %v, annotations %v), want %s %v", got, sets.List(p.take.Labels), sets.List(p.take.Annotations), kt.Field, tc.wantTake)
					}
					if got := sets.List(keysOf(kt, p.keep)); !sameKeys(got, tc.wantKeep) || !othersEmpty(kt, p.keep) {
						t.Errorf("keeps %v (labels %v, annotations %v), want %s %v", got, sets.List(p.keep.Labels), sets.List(p.keep.Annotations), kt.Field, tc.wantKeep)
					}
					if p.refused != tc.wantRefuse {
						t.Errorf("refused %q, want %q", p.refused, tc.wantRefuse)
					}
				})
			}
		})
	}
}

// keysOf is the set of kt in keys.
func keysOf(kt testkit.KeyType, keys owned) sets.Set[string] {
	if kt.Field == "labels" {
		return keys.Labels
	}
	return keys.Annotations
}

// othersEmpty reports whether keys hold nothing of the other key type.
func othersEmpty(kt testkit.KeyType, keys owned) bool {
	return keys.Labels.Len()+keys.Annotations.Len() == keysOf(kt, keys).Len()
}

func sameKeys(a, b []string) bool { return len(a) == len(b) && sets.New(a...).Equal(sets.New(b...)) }
