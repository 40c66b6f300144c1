package ownership

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
)

// The memo of parsed managedFields sets answers what parsing answers, on a
// miss and on a hit, whatever the bytes; a set it handed out is not changed
// by a later parse of other bytes.
func FuzzParseAnswersAsParsing(f *testing.F) {
	f.Add([]byte(`{"f:metadata":{"f:labels":{"f:team":{},".":{}},"f:annotations":{"f:a":{}}}}`), []byte(`{"f:metadata":{"f:labels":{"f:tier":{}}}}`))
	f.Add([]byte(`not json`), []byte(`{}`))
	f.Fuzz(func(t *testing.T, a, b []byte) {
		want := parse(a)
		first := Parse(a)
		Parse(b)
		again := Parse(a)
		for _, got := range []Keys{first, again} {
			if !got.Labels.Equal(want.Labels) || !got.Annotations.Equal(want.Annotations) {
				t.Fatalf("memo gave %v, parsing %v", got, want)
			}
		}
	})
}

func TestAnnotationsOf(t *testing.T) {
	entry := func(manager string, op metav1.ManagedFieldsOperationType, sub, fields string) metav1.ManagedFieldsEntry {
		return metav1.ManagedFieldsEntry{Manager: manager, Operation: op, Subresource: sub, FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(fields)}
	}
	fields := []metav1.ManagedFieldsEntry{
		entry("metawatch", metav1.ManagedFieldsOperationApply, "", `{"f:metadata":{"f:labels":{"f:team":{}},"f:annotations":{"f:example.com/a":{}}}}`),
		entry("metawatch", metav1.ManagedFieldsOperationUpdate, "", `{"f:metadata":{"f:annotations":{"f:by-update":{}}}}`),
		entry("metawatch", metav1.ManagedFieldsOperationApply, "status", `{"f:metadata":{"f:annotations":{"f:on-status":{}}}}`),
		entry("old-name", metav1.ManagedFieldsOperationApply, "", `{"f:metadata":{"f:annotations":{"f:example.com/b":{}}}}`),
	}
	tests := map[string]struct {
		managers []string
		want     []string
	}{
		"only the apply entry of the main resource counts": {managers: []string{"metawatch"}, want: []string{"example.com/a"}},
		"the adopted name's keys are added":                {managers: []string{"metawatch", "old-name"}, want: []string{"example.com/a", "example.com/b"}},
		"an empty name is no manager":                      {managers: []string{"", "old-name"}, want: []string{"example.com/b"}},
		"a manager without an entry owns nothing":          {managers: []string{"nobody"}, want: nil},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := AnnotationsOf(fields, tc.managers...); !got.Equal(sets.New(tc.want...)) {
				t.Errorf("AnnotationsOf = %v, want %v", sets.List(got), tc.want)
			}
		})
	}
	obj := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{ManagedFields: fields}}
	if got := Applied(obj, "metawatch"); !got.Labels.Equal(sets.New("team")) || !got.Annotations.Equal(sets.New("example.com/a")) {
		t.Errorf("Applied = %v", got)
	}
}

// BenchmarkApplied reads the keys metawatch owns on a pod whose entry
// holds three labels and an annotation, as a decision does several times.
func BenchmarkApplied(b *testing.B) {
	obj := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{ManagedFields: []metav1.ManagedFieldsEntry{{
		Manager: "metawatch", Operation: metav1.ManagedFieldsOperationApply, APIVersion: "v1", FieldsType: "FieldsV1",
		FieldsV1: metav1.NewFieldsV1(`{"f:metadata":{"f:annotations":{"f:example.com/owner":{}},"f:labels":{"f:team":{},"f:tier":{},"f:cost-center":{}}}}`),
	}}}}
	b.ReportAllocs()
	for b.Loop() {
		if o := Applied(obj, "metawatch"); o.Labels.Len() != 3 {
			b.Fatal(o)
		}
	}
}
