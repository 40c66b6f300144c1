package rulecontroller

import (
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/metawatch/metawatch/pkg/authority"
	"github.com/metawatch/metawatch/pkg/brake"
	"github.com/metawatch/metawatch/pkg/rules"
)

// fakeRelists says the kinds in relisting relist.
type fakeRelists struct{ relisting map[schema.GroupKind]bool }

func (f fakeRelists) Relisting(k schema.GroupKind) bool   { return f.relisting[k] }
func (f fakeRelists) OnRelisted(schema.GroupKind, func()) {}

// While its kind relists, a pod's removals and releases are held (its set
// goes on), without counting against the removal brake, and the pod is
// remembered to be queued again; once the relist is over they go on.
func TestRelistHoldsRemovalsAndReleasesNeverSets(t *testing.T) {
	pod := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p",
		Labels: map[string]string{"gone": "x", "old": "y"},
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: authority.DefaultFieldManager, Operation: metav1.ManagedFieldsOperationApply,
			FieldsV1: metav1.NewFieldsV1(`{"f:metadata":{"f:labels":{"f:gone":{}}}}`)}},
	}}
	key := types.NamespacedName{Namespace: "ns", Name: "p"}
	wanted := rules.Result{Labels: map[string]rules.Owned{"tier": {Value: "gold", Rule: "tier"}}, RemoveLabels: map[string]string{"old": "strip"}}
	held := rules.Result{Labels: map[string]rules.Owned{"tier": {Value: "gold", Rule: "tier"}, "gone": {Value: "x", Keep: true}}}
	gvk := corev1.SchemeGroupVersion.WithKind("Pod")
	for _, withBrake := range []bool{false, true} {
		var b *brake.Brake
		if withBrake {
			b = brake.New(brake.Bound{Objects: 1, Window: time.Hour}, "h", 0, nil)
		}
		relists := fakeRelists{relisting: map[schema.GroupKind]bool{gvk.GroupKind(): true}}
		r := &ruleReconciler{GVK: gvk, settings: defaultSettings(), wiring: Wiring{Brake: b, Relists: relists}, relistHeld: newRelistHolds()}
		if got := r.braked(t.Context(), key, pod, r.mine(pod), wanted); !reflect.DeepEqual(got, held) {
			t.Errorf("brake %v, relisting: braked = %+v, want %+v", withBrake, got, held)
		}
		if got := r.relistHeld.take(); !reflect.DeepEqual(got, []types.NamespacedName{key}) {
			t.Errorf("brake %v: held %v, want the pod, to queue it again", withBrake, got)
		}
		relists.relisting[gvk.GroupKind()] = false
		// The brake's bound (1) was not used by the held pod.
		if got := r.braked(t.Context(), key, pod, r.mine(pod), wanted); !reflect.DeepEqual(got, wanted) {
			t.Errorf("brake %v, relist over: braked = %+v, want %+v", withBrake, got, wanted)
		}
		if got := r.relistHeld.take(); len(got) != 0 {
			t.Errorf("brake %v: held %v after the relist, want none", withBrake, got)
		}
	}
}
