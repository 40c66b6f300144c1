package rulecontroller

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/metawatch/metawatch/pkg/authority"
	"github.com/metawatch/metawatch/pkg/brake"
	"github.com/metawatch/metawatch/pkg/rules"
	"github.com/metawatch/metawatch/pkg/testing/testkit"
)

// braked leaves a held object as it is but for its sets, labels and
// annotations alike: what it decides for a pod that owns "gone" (no rule
// wants it: a release), has "old" (a rule removes it) and misses "tier" (a
// rule sets it).
func TestBrakedHoldsRemovalsAndReleasesNeverSets(t *testing.T) {
	for name, kt := range testkit.KeyTypes {
		t.Run(name, func(t *testing.T) {
			pod := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p",
				ManagedFields: []metav1.ManagedFieldsEntry{{Manager: authority.DefaultFieldManager, Operation: metav1.ManagedFieldsOperationApply,
					FieldsV1: metav1.NewFieldsV1(fmt.Sprintf(`{"f:metadata":{"f:%s":{"f:gone":{}}}}`, kt.Field))}},
			}}
			setKeys(kt, pod, map[string]string{"gone": "x", "old": "y"})
			wanted := result(kt, map[string]rules.Owned{"tier": {Value: "gold", Rule: "tier"}}, map[string]string{"old": "strip"})
			cases := map[string]struct {
				admitFirst bool // another pod used the bound (1) up first
				want       rules.Result
			}{
				"within the bound: the release and the remove go on": {want: wanted},
				"beyond the bound: the release is kept at its value, the remove not sent, the set goes on": {admitFirst: true,
					want: result(kt, map[string]rules.Owned{"tier": {Value: "gold", Rule: "tier"}, "gone": {Value: "x", Keep: true}}, nil)},
			}
			for name, c := range cases {
				t.Run(name, func(t *testing.T) {
					b := brake.New(brake.Bound{Objects: 1, Window: time.Hour}, "h", 0, nil)
					if c.admitFirst {
						b.Admit(t.Context(), "Pod", types.NamespacedName{Namespace: "ns", Name: "other"}, nil, 0)
					}
					r := &ruleReconciler{GVK: corev1.SchemeGroupVersion.WithKind("Pod"), settings: defaultSettings(), wiring: Wiring{Brake: b}}
					got := r.braked(t.Context(), types.NamespacedName{Namespace: "ns", Name: "p"}, pod, r.mine(pod), wanted)
					if !reflect.DeepEqual(got, c.want) {
						t.Errorf("braked = %+v, want %+v", got, c.want)
					}
				})
			}
		})
	}
}

// result is a rules.Result that sets and removes keys of kt only.
func result(kt testkit.KeyType, set map[string]rules.Owned, remove map[string]string) rules.Result {
	if kt.Field == "labels" {
		return rules.Result{Labels: set, RemoveLabels: remove}
	}
	return rules.Result{Annotations: set, RemoveAnnotations: remove}
}

// setKeys sets obj's map of kt.
func setKeys(kt testkit.KeyType, obj metav1.Object, m map[string]string) {
	if kt.Field == "labels" {
		obj.SetLabels(m)
	} else {
		obj.SetAnnotations(m)
	}
}
