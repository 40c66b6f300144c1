package testkit

import (
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// KeyType is one of the two maps rules write, labels or annotations, as a
// test needs to say it: in a configuration, on an object, to kubectl. Tests
// of what metawatch does to keys run as a table over KeyTypes, so that what
// holds for labels is shown to hold for annotations too.
type KeyType struct {
	// Name is "label" or "annotation".
	Name string
	// Set, Remove and Copy are the configuration's fields: setLabels,
	// removeLabels, and copyFromNamespace's labels (the annotations' likewise).
	Set, Remove, Copy string
	// Require is the audit's field: requireLabels or requireAnnotations.
	Require string
	// Kubectl is the kubectl verb that sets one: label or annotate.
	Kubectl string
	// Field is the metadata field, for a patch: labels or annotations.
	Field string
}

// KeyTypes are labels and annotations, keyed by a name for t.Run.
var KeyTypes = map[string]KeyType{
	"labels":      {Name: "label", Set: "setLabels", Remove: "removeLabels", Copy: "labels", Require: "requireLabels", Kubectl: "label", Field: "labels"},
	"annotations": {Name: "annotation", Set: "setAnnotations", Remove: "removeAnnotations", Copy: "annotations", Require: "requireAnnotations", Kubectl: "annotate", Field: "annotations"},
}

// Of is obj's map of this type.
func (k KeyType) Of(obj metav1.Object) map[string]string {
	if k.Field == "labels" {
		return obj.GetLabels()
	}
	return obj.GetAnnotations()
}

// Patch is a JSON merge patch setting key to value on the map (null: removed).
func (k KeyType) Patch(key string, value *string) string {
	v := "null"
	if value != nil {
		v = fmt.Sprintf("%q", *value)
	}
	return fmt.Sprintf(`{"metadata":{%q:{%q:%s}}}`, k.Field, key, v)
}

// CountPods is how many pods of ns have key at value ("" for any value),
// listed as metadata, a page at a time.
func (k KeyType) CountPods(t testing.TB, c client.Client, ns, key, value string) int {
	t.Helper()
	n := 0
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(schema.GroupVersionKind{Version: "v1", Kind: "PodList"})
	for {
		if err := c.List(t.Context(), list, client.InNamespace(ns), client.Limit(5000), client.Continue(list.Continue)); err != nil {
			t.Fatal(err)
		}
		for i := range list.Items {
			v, has := k.Of(&list.Items[i])[key]
			if has && (value == "" || v == value) {
				n++
			}
		}
		if list.Continue == "" {
			return n
		}
	}
}
