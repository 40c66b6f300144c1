package rulecontroller

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/metawatch/metawatch/pkg/config"
	"github.com/metawatch/metawatch/pkg/telemetry"
)

func TestPlanAdoption(t *testing.T) {
	began := time.Date(2026, 11, 26, 3, 0, 0, 0, time.UTC)
	entry := func(manager string, at time.Time, fields string) metav1.ManagedFieldsEntry {
		when := metav1.NewTime(at)
		return metav1.ManagedFieldsEntry{Manager: manager, Operation: metav1.ManagedFieldsOperationApply, Time: &when, FieldsV1: metav1.NewFieldsV1(fields)}
	}
	const labelsAB = `{"f:metadata":{"f:labels":{".":{},"f:a":{},"f:b":{}}}}`
	cases := map[string]struct {
		entries            []metav1.ManagedFieldsEntry
		wantOK             bool
		wantTake, wantKeep []string
		wantRefused        string
	}{
		"the old name's keys are taken, the protected one kept": {
			entries: []metav1.ManagedFieldsEntry{entry("old", began.Add(-time.Hour), `{"f:metadata":{"f:labels":{"f:a":{},"f:guarded":{}}}}`)},
			wantOK:  true, wantTake: []string{"a"}, wantKeep: []string{"guarded"},
		},
		"a key the object no longer has is neither taken nor kept": {
			entries: []metav1.ManagedFieldsEntry{entry("old", began.Add(-time.Hour), `{"f:metadata":{"f:labels":{"f:a":{},"f:gone":{}}}}`)},
			wantOK:  true, wantTake: []string{"a"},
		},
		"no entry of the old name: nothing to do": {
			entries: []metav1.ManagedFieldsEntry{entry("someone", began, labelsAB)},
		},
		"only protected keys: nothing to take": {
			entries: []metav1.ManagedFieldsEntry{entry("old", began, `{"f:metadata":{"f:labels":{"f:guarded":{}}}}`)},
		},
		"an apply after adoption began and its slack is a live writer's": {
			entries: []metav1.ManagedFieldsEntry{entry("old", began.Add(liveWriterSlack+time.Second), labelsAB)},
			wantOK:  true, wantTake: []string{"a", "b"}, wantRefused: telemetry.AdoptionLive,
		},
		"an apply within the slack is the old installation's last": {
			entries: []metav1.ManagedFieldsEntry{entry("old", began.Add(liveWriterSlack), labelsAB)},
			wantOK:  true, wantTake: []string{"a", "b"},
		},
		"an old name that owns the spec too is refused": {
			entries: []metav1.ManagedFieldsEntry{entry("old", began.Add(-time.Hour), `{"f:metadata":{"f:labels":{"f:a":{}}},"f:spec":{"f:replicas":{}}}`)},
			wantOK:  true, wantTake: []string{"a"}, wantRefused: telemetry.AdoptionOtherFields,
		},
		"an old name that owns a finalizer is refused": {
			entries: []metav1.ManagedFieldsEntry{entry("old", began.Add(-time.Hour), `{"f:metadata":{"f:finalizers":{},"f:labels":{"f:a":{}}}}`)},
			wantOK:  true, wantTake: []string{"a"}, wantRefused: telemetry.AdoptionOtherFields,
		},
		"the old name's update entry is not an apply: nothing to do": {
			entries: []metav1.ManagedFieldsEntry{func() metav1.ManagedFieldsEntry {
				e := entry("old", began, labelsAB)
				e.Operation = metav1.ManagedFieldsOperationUpdate
				return e
			}()},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			limits := config.DefaultLimits()
			limits.ProtectedKeys = []string{"guarded"}
			r := &ruleReconciler{GVK: corev1.SchemeGroupVersion.WithKind("Pod"), adoptFrom: "old", limits: &limits,
				adoptionBegan: func() time.Time { return began }}
			obj := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns",
				Labels: map[string]string{"a": "1", "b": "2", "guarded": "3"}, ManagedFields: tc.entries}}
			p, ok := r.planAdoption(obj)
			if ok != tc.wantOK {
				t.Fatalf("planned %v, want %v", ok, tc.wantOK)
			}
			if !ok {
				return
			}
			if got := sets.List(p.take.Labels); !sameKeys(got, tc.wantTake) {
				t.Errorf("takes %v, want %v", got, tc.wantTake)
			}
			if got := sets.List(p.keep.Labels); !sameKeys(got, tc.wantKeep) {
				t.Errorf("keeps %v, want %v", got, tc.wantKeep)
			}
			if p.refused != tc.wantRefused {
				t.Errorf("refused %q, want %q", p.refused, tc.wantRefused)
			}
		})
	}
}

func sameKeys(a, b []string) bool { return len(a) == len(b) && sets.New(a...).Equal(sets.New(b...)) }
