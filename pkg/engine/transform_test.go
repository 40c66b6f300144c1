package engine

import (
	"reflect"
	"testing"
	"unsafe"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
)

func TestTransform(t *testing.T) {
	own := metav1.ManagedFieldsEntry{Manager: FieldManager, Operation: metav1.ManagedFieldsOperationApply, FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:metadata":{}}`)}}
	cases := map[string]struct {
		keep            sets.Set[string]
		wantAnnotations map[string]string
	}{
		"annotations nothing reads are dropped": {keep: sets.New("example.com/owner"), wantAnnotations: map[string]string{"example.com/owner": "alice"}},
		"nil keeps every annotation": {keep: nil, wantAnnotations: map[string]string{
			"example.com/owner": "alice", "kubectl.kubernetes.io/last-applied-configuration": "{...}",
		}},
		"an empty keep-list keeps none": {keep: sets.New[string](), wantAnnotations: nil},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			obj := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{
				Name: "p", Namespace: "shop", Labels: map[string]string{"app": "web"},
				Annotations:     map[string]string{"example.com/owner": "alice", "kubectl.kubernetes.io/last-applied-configuration": "{...}"},
				ManagedFields:   []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationUpdate}, own, {Manager: "kubelet"}},
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-1"}},
			}}
			if _, err := Transform(tc.keep)(obj); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(obj.Annotations, tc.wantAnnotations) {
				t.Errorf("annotations %v, want %v", obj.Annotations, tc.wantAnnotations)
			}
			if len(obj.ManagedFields) != 1 || obj.ManagedFields[0].Manager != FieldManager {
				t.Errorf("managedFields %v, want only metawatch's", obj.ManagedFields)
			}
			if obj.Labels["app"] != "web" || obj.Namespace != "shop" || obj.OwnerReferences[0].Kind != "ReplicaSet" {
				t.Errorf("the transform changed what it keeps: %+v", obj.ObjectMeta)
			}
		})
	}
}

// Two objects' equal strings share one copy after the transform.
func TestTransformInterns(t *testing.T) {
	a := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: string([]byte("shop")), Labels: map[string]string{string([]byte("app")): string([]byte("web"))}}}
	b := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: string([]byte("shop")), Labels: map[string]string{string([]byte("app")): string([]byte("web"))}}}
	for _, obj := range []*metav1.PartialObjectMetadata{a, b} {
		if _, err := Transform(nil)(obj); err != nil {
			t.Fatal(err)
		}
	}
	if unsafe.StringData(a.Namespace) != unsafe.StringData(b.Namespace) {
		t.Error("namespaces are not shared")
	}
	if unsafe.StringData(a.Labels["app"]) != unsafe.StringData(b.Labels["app"]) {
		t.Error("label values are not shared")
	}
	for ka := range a.Labels {
		for kb := range b.Labels {
			if unsafe.StringData(ka) != unsafe.StringData(kb) {
				t.Error("label keys are not shared")
			}
		}
	}
}
