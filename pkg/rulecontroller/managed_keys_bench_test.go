package rulecontroller

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/metawatch/metawatch/pkg/authority"
)

// BenchmarkOwnedKeys reads the keys metawatch owns on a pod whose entry
// holds three labels and an annotation, as a decision does several times.
func BenchmarkOwnedKeys(b *testing.B) {
	obj := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{ManagedFields: []metav1.ManagedFieldsEntry{{
		Manager: authority.DefaultFieldManager, Operation: metav1.ManagedFieldsOperationApply, APIVersion: "v1", FieldsType: "FieldsV1",
		FieldsV1: metav1.NewFieldsV1(`{"f:metadata":{"f:annotations":{"f:example.com/owner":{}},"f:labels":{"f:team":{},"f:tier":{},"f:cost-center":{}}}}`),
	}}}}
	b.ReportAllocs()
	for b.Loop() {
		if o := ownedKeys(obj, authority.DefaultFieldManager); o.labels.Len() != 3 {
			b.Fatal(o)
		}
	}
}
