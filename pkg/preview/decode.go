package preview

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"

	"github.com/metawatch/metawatch/pkg/config"
)

// Read reads YAML or JSON objects, several documents in a stream, and the
// items of a List (kubectl get -o yaml), whole: for small inputs. Large
// ones go through Stream, an object at a time.
func Read(r io.Reader) ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	err := Stream(r, nil, func(obj *unstructured.Unstructured) error {
		out = append(out, obj)
		return nil
	})
	return out, err
}

// SelectorFields are the fields the watches' field selectors read (dotted
// paths): what an object from a file keeps besides its metadata.
func SelectorFields(c *config.Config) []string {
	var out []string
	for _, w := range c.Watches {
		sel, err := fields.ParseSelector(w.FieldSelector)
		if err != nil {
			continue // the configuration's validation says why
		}
		for _, req := range sel.Requirements() {
			out = append(out, req.Field)
		}
	}
	return out
}

// keptFields are what an object read keeps: what a preview reads.
var keptFields = []string{"apiVersion", "kind", "metadata"}

// objectsOf decodes one JSON object: the object, trimmed to its apiVersion,
// kind, metadata and the fields given (dotted paths), or the items of a
// List (an object with an items array), each checked for what a preview
// reads: kind, apiVersion, a name, and string labels and annotations
// (unstructured drops a map with any other value without a word). An empty
// document (a trailing ---) is none. A List nested in a List's items is
// expanded here, whole; the List of a document is streamed item by item
// before it comes here.
func objectsOf(raw []byte, selected []string, item bool, each func(*unstructured.Unstructured) error) error {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(raw, &top); err != nil || (top == nil && item) {
		return notAnObject(raw, err)
	}
	return objectsOfFields(top, selected, item, each)
}

// objectsOfFields is objectsOf, its object's top-level fields decoded.
func objectsOfFields(top map[string]json.RawMessage, selected []string, item bool, each func(*unstructured.Unstructured) error) error {
	if len(top) == 0 && !item {
		return nil // an empty document (a trailing ---)
	}
	if items := top["items"]; isArray(items) {
		var list []json.RawMessage
		if err := json.Unmarshal(items, &list); err != nil {
			return err
		}
		for i, item := range list {
			if err := objectsOf(item, selected, true, each); err != nil {
				return itemError(i, err)
			}
		}
		return nil
	}
	obj, err := trimmed(top, selected)
	if err != nil {
		return err
	}
	if err := checkObject(obj.Object); err != nil {
		return err
	}
	if strings.HasSuffix(obj.GetKind(), "List") {
		return fmt.Errorf("a %s without items", obj.GetKind())
	}
	return each(obj)
}

// trimmed is the object of top with only what a preview reads of it.
func trimmed(top map[string]json.RawMessage, selected []string) (*unstructured.Unstructured, error) {
	obj := map[string]any{}
	for _, k := range keptFields {
		if raw, ok := top[k]; ok {
			var v any
			if err := json.Unmarshal(raw, &v); err != nil {
				return nil, err
			}
			obj[k] = v
		}
	}
	for _, path := range selected {
		if slices.Contains(keptFields, strings.Split(path, ".")[0]) {
			continue // kept whole
		}
		if err := keepField(obj, top, strings.Split(path, ".")); err != nil {
			return nil, err
		}
	}
	return &unstructured.Unstructured{Object: obj}, nil
}

// keepField copies the field at path of top into obj, if there is one.
func keepField(obj map[string]any, top map[string]json.RawMessage, path []string) error {
	raw, ok := top[path[0]]
	if !ok {
		return nil
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return err
	}
	if len(path) > 1 {
		inner, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		if v, ok = inner[path[1]]; !ok {
			return nil
		}
		for _, p := range path[2:] {
			m, ok := v.(map[string]any)
			if !ok {
				return nil
			}
			if v, ok = m[p]; !ok {
				return nil
			}
		}
	}
	return unstructured.SetNestedField(obj, v, path...)
}

func isArray(raw json.RawMessage) bool {
	raw = bytes.TrimLeft(raw, " \t\r\n")
	return len(raw) > 0 && raw[0] == '['
}

// notAnObject says what a document or item is instead of an object.
func notAnObject(raw []byte, err error) error {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return err
	}
	return fmt.Errorf("expected an object (apiVersion, kind, metadata...), found %s", describeValue(v))
}

func itemError(i int, err error) error { return fmt.Errorf("items[%d]: %w", i, err) }

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
	case []any:
		return "a list"
	case map[string]any:
		return "a mapping"
	}
	return fmt.Sprintf("a %T", v)
}
