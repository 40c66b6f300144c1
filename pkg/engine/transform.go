package engine

import (
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
)

// FieldManager is the server-side apply field manager metawatch writes as.
const FieldManager = "metawatch"

// TransformKeepOwnManagedFields drops every managedFields entry but metawatch's
// own, before an object enters the cache. managedFields are most of the bytes
// of metadata; metawatch's entry is small (the keys its rules own) and it is
// how a reconcile knows which keys metawatch set and must remove when a rule
// stops wanting them, without asking the API server.
func TransformKeepOwnManagedFields() toolscache.TransformFunc {
	return func(in any) (any, error) {
		obj, err := meta.Accessor(in)
		if err != nil {
			return in, nil //nolint:nilerr // tombstones and the like pass through unchanged
		}
		fields := obj.GetManagedFields()
		if len(fields) == 0 {
			return in, nil
		}
		obj.SetManagedFields(own(fields))
		return in, nil
	}
}

// own returns the entries of FieldManager's applies, or nil.
func own(fields []metav1.ManagedFieldsEntry) []metav1.ManagedFieldsEntry {
	for _, f := range fields {
		if f.Manager == FieldManager && f.Operation == metav1.ManagedFieldsOperationApply && f.Subresource == "" {
			return []metav1.ManagedFieldsEntry{f}
		}
	}
	return nil
}
