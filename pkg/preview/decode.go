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

// expand is obj, or the items of a List, each checked for what a preview
// reads: kind, apiVersion, a name, and string labels and annotations
// (unstructured drops a map with any other value without a word).
func expand(obj *unstructured.Unstructured) ([]*unstructured.Unstructured, error) {
	if obj.IsList() {
		var out []*unstructured.Unstructured
		i := 0
		err := obj.EachListItem(func(o runtime.Object) error {
			items, err := expand(o.(*unstructured.Unstructured))
			if err != nil {
				return fmt.Errorf("items[%d]: %w", i, err)
			}
			i++
			out = append(out, items...)
			return nil
		})
		return out, err
	}
	if err := checkObject(obj.Object); err != nil {
		return nil, err
	}
	if strings.HasSuffix(obj.GetKind(), "List") {
		return nil, fmt.Errorf("a %s without items", obj.GetKind())
	}
	return []*unstructured.Unstructured{obj}, nil
}

const needs = "each object needs apiVersion, kind and metadata.name"

func checkObject(o map[string]any) error {
	for _, f := range []string{"apiVersion", "kind"} {
		switch v, ok := o[f].(string); {
		case o[f] == nil || (ok && v == ""):
			return fmt.Errorf("an object without %s: %s", f, needs)
		case !ok:
			return fmt.Errorf("%s: expected a string, found %s: quote it", f, describeValue(o[f]))
		}
	}
	meta, _ := o["metadata"].(map[string]any)
	switch name, ok := meta["name"].(string); {
	case meta["name"] == nil || (ok && name == ""):
		return fmt.Errorf("a %s without metadata.name: %s", o["kind"], needs)
	case !ok:
		return fmt.Errorf("a %s whose metadata.name is %s: quote it", o["kind"], describeValue(meta["name"]))
	}
	for _, m := range []string{"labels", "annotations"} {
		values, _ := meta[m].(map[string]any)
		for k, v := range values {
			if _, ok := v.(string); !ok {
				return fmt.Errorf("%s %s: metadata.%s[%s]: expected a string, found %s: quote it", o["kind"], meta["name"], m, k, describeValue(v))
			}
		}
	}
	return nil
}

// describeValue names what a field holds, for a message.
func describeValue(v any) string {
	switch v := v.(type) {
	case nil:
		return "nothing"
	case string:
		return fmt.Sprintf("%q", v)
	case bool:
		return fmt.Sprintf("%v (YAML reads yes, no, on, off, true and false as booleans)", v)
	case int64, float64:
		return fmt.Sprintf("the number %v", v)
	}
	return fmt.Sprintf("a %T", v)
}
