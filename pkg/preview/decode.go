package preview

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// ReadFiles reads the objects of every path ("-": stdin), in order.
func ReadFiles(paths []string, stdin io.Reader) ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	for _, p := range paths {
		r := stdin
		name := "stdin"
		if p != "-" {
			f, err := os.Open(p)
			if err != nil {
				return nil, err
			}
			defer func() { _ = f.Close() }()
			r, name = f, p
		}
		objs, err := Read(r)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		out = append(out, objs...)
	}
	return out, nil
}

// Read reads YAML or JSON objects, several documents in a stream, and the
// items of a List (kubectl get -o yaml).
func Read(r io.Reader) ([]*unstructured.Unstructured, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(r, 4096)
	var out []*unstructured.Unstructured
	for doc := 1; ; doc++ {
		var m map[string]any
		err := dec.Decode(&m)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", doc, err)
		}
		if len(m) == 0 {
			continue // an empty document (a trailing ---)
		}
		objs, err := expand(&unstructured.Unstructured{Object: m})
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", doc, err)
		}
		out = append(out, objs...)
	}
}

// expand is obj, or the items of a List, each checked for a kind and name.
func expand(obj *unstructured.Unstructured) ([]*unstructured.Unstructured, error) {
	if obj.IsList() {
		var out []*unstructured.Unstructured
		err := obj.EachListItem(func(o runtime.Object) error {
			items, err := expand(o.(*unstructured.Unstructured))
			out = append(out, items...)
			return err
		})
		return out, err
	}
	switch {
	case obj.GetKind() == "":
		return nil, fmt.Errorf("an object without kind: each object needs apiVersion, kind and metadata.name")
	case obj.GetName() == "":
		return nil, fmt.Errorf("a %s without metadata.name: each object needs apiVersion, kind and metadata.name", obj.GetKind())
	case strings.HasSuffix(obj.GetKind(), "List"):
		return nil, fmt.Errorf("a %s without items", obj.GetKind())
	}
	return []*unstructured.Unstructured{obj}, nil
}
