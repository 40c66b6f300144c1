package preview

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// Streaming reads what decoding each document whole (apimachinery's
// YAMLOrJSONDecoder, a List's items from the decoded List) reads: the same
// objects in the same order, and an error where that decode fails.
func FuzzStreamReadsWhatAWholeDecodeReads(f *testing.F) {
	for _, seed := range []string{
		"apiVersion: v1\nitems:\n- apiVersion: v1\n  kind: Pod\n  metadata:\n    name: a\n    labels: {team: red}\n- apiVersion: v1\n  kind: Pod\n  metadata:\n    name: b\nkind: List\nmetadata:\n  resourceVersion: \"\"\n",
		"apiVersion: v1\nkind: List\nitems:\n  - apiVersion: v1\n    kind: Pod\n    metadata: {name: a}\n  # a comment\n  - apiVersion: v1\n    kind: Pod\n    metadata:\n      name: b\n      annotations:\n        note: |\n          two\n          lines\n",
		`{"apiVersion":"v1","items":[{"apiVersion":"v1","kind":"Pod","metadata":{"name":"a"}}],"kind":"List"}` + "\n" + `{"apiVersion":"v1","kind":"Node","metadata":{"name":"n"}}`,
		"{apiVersion: v1, kind: Pod, metadata: {name: a}}\n",
		"---\napiVersion: v1\nkind: Pod\nmetadata: {name: a}\n---\n# only a comment\n---\nitems: []\n---\nitems:\n- {apiVersion: v1, kind: Pod, metadata: {name: c}}\nkind: List\n",
		"apiVersion: v1\nkind: Pod\nmetadata: {name: a, labels: {legacy: on}}\n",
		"items:\n  a: b\napiVersion: v1\nkind: Pod\nmetadata: {name: a}\n",
		"items:\n- apiVersion: v1\n  kind: List\n  items:\n  - {apiVersion: v1, kind: Pod, metadata: {name: nested}}\n",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, input string) {
		want, wantErr := wholeDecode(input)
		var got []string
		err := Stream(strings.NewReader(input), nil, func(o *unstructured.Unstructured) error {
			got = append(got, describe(o))
			return nil
		})
		switch {
		case wantErr == nil && err != nil:
			t.Fatalf("a whole decode reads %v, streaming fails: %v", want, err)
		case wantErr != nil && err == nil:
			t.Fatalf("a whole decode fails (%v), streaming reads %v", wantErr, got)
		case err == nil && fmt.Sprint(got) != fmt.Sprint(want):
			t.Fatalf("streaming reads\n%v\na whole decode\n%v", got, want)
		}
	})
}

func wholeDecode(input string) ([]string, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(input), 4096)
	var out []string
	for {
		var m map[string]any
		err := dec.Decode(&m)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		if len(m) == 0 {
			continue
		}
		objs, err := expandWhole(&unstructured.Unstructured{Object: m})
		if err != nil {
			return nil, err
		}
		out = append(out, objs...)
	}
}

func expandWhole(obj *unstructured.Unstructured) ([]string, error) {
	if obj.IsList() {
		var out []string
		err := obj.EachListItem(func(o runtime.Object) error {
			items, err := expandWhole(o.(*unstructured.Unstructured))
			out = append(out, items...)
			return err
		})
		return out, err
	}
	if err := checkObject(obj.Object); err != nil {
		return nil, err
	}
	if strings.HasSuffix(obj.GetKind(), "List") {
		return nil, fmt.Errorf("a %s without items", obj.GetKind())
	}
	return []string{describe(obj)}, nil
}

// describe is what a preview reads of o.
func describe(o *unstructured.Unstructured) string {
	return fmt.Sprintf("%s %s/%s/%s %v %v", o.GetAPIVersion(), o.GetKind(), o.GetNamespace(), o.GetName(), o.GetLabels(), o.GetAnnotations())
}
