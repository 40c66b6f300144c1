package preview_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/metawatch/metawatch/pkg/preview"
)

const pod = `{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "%s", "namespace": "shop"}, "spec": {"nodeName": "n1", "containers": [{"name": "c"}]}, "status": {"phase": "Running"}}`

func podJSON(name string) string { return strings.ReplaceAll(pod, "%s", name) }

// Stream reads documents and List items one at a time, in order, each
// trimmed to what a preview reads, and names the document and item of an
// error.
func TestStreamReadsAnObjectAtATime(t *testing.T) {
	cases := map[string]struct {
		input    string
		selected []string
		want     []string // kind/name, and the object's top-level fields
		err      string
	}{
		"a JSON List, as kubectl get -o json writes it, its kind after its items": {
			input: `{"apiVersion": "v1", "items": [` + podJSON("a") + `, ` + podJSON("b") + `], "kind": "List", "metadata": {"resourceVersion": ""}}`,
			want:  []string{"Pod/a [apiVersion kind metadata]", "Pod/b [apiVersion kind metadata]"}},
		"a stream of JSON documents, an empty one and a List among them": {
			input: podJSON("a") + "\n{}\n" + `{"kind": "PodList", "items": [` + podJSON("b") + "]}\n" + podJSON("c"),
			want:  []string{"Pod/a [apiVersion kind metadata]", "Pod/b [apiVersion kind metadata]", "Pod/c [apiVersion kind metadata]"}},
		"the fields the field selectors read are kept, the rest of spec and status is not": {
			input: podJSON("a"), selected: []string{"status.phase", "spec.nodeName", "metadata.name", "spec.missing"},
			want: []string{"Pod/a [apiVersion kind metadata spec:map[nodeName:n1] status:map[phase:Running]]"}},
		"a YAML List, as kubectl get -o yaml writes it": {
			input: "apiVersion: v1\nitems:\n- apiVersion: v1\n  kind: Pod\n  metadata:\n    name: a\n  status:\n    phase: Running\n" +
				"- apiVersion: v1\n  kind: Pod\n  metadata:\n    name: b\nkind: List\nmetadata:\n  resourceVersion: \"\"\n",
			want: []string{"Pod/a [apiVersion kind metadata]", "Pod/b [apiVersion kind metadata]"}},
		"a YAML List with indented items, comments and a block scalar": {
			input: "kind: List\nitems:\n  # the first\n  - apiVersion: v1\n    kind: Pod\n    metadata:\n      name: a\n      annotations:\n        note: |\n          - not an item\n          items:\n\n  - {apiVersion: v1, kind: Pod, metadata: {name: b}}\n",
			want:  []string{"Pod/a [apiVersion kind metadata]", "Pod/b [apiVersion kind metadata]"}},
		"several YAML documents, empty ones and a List among them": {
			input: "---\napiVersion: v1\nkind: Namespace\nmetadata: {name: shop}\n---\n# nothing\n---\n---\nitems:\n- {apiVersion: v1, kind: Pod, metadata: {name: a}}\n---\napiVersion: v1\nkind: Pod\nmetadata: {name: b}\n",
			want:  []string{"Namespace/shop [apiVersion kind metadata]", "Pod/a [apiVersion kind metadata]", "Pod/b [apiVersion kind metadata]"}},
		"a YAML flow mapping, which looks like JSON": {
			input: "{apiVersion: v1, kind: Pod, metadata: {name: a}}\n",
			want:  []string{"Pod/a [apiVersion kind metadata]"}},
		"items that are not a list: an object, not a List": {
			input: "apiVersion: v1\nkind: Pod\nmetadata: {name: a}\nitems:\n  a: b\n",
			want:  []string{"Pod/a [apiVersion kind metadata]"}},
		"a JSON List's item without a name, by its index": {
			input: `{"kind": "List", "items": [` + podJSON("a") + `, {"apiVersion": "v1", "kind": "Pod", "metadata": {}}]}`,
			err:   "document 1: items[1]: a Pod without metadata.name"},
		"a YAML List's item without a name, by its index": {
			input: "apiVersion: v1\nitems:\n- {apiVersion: v1, kind: Pod, metadata: {name: a}}\n- apiVersion: v1\n  kind: Pod\n  metadata: {}\nkind: List\n",
			err:   "document 1: items[1]: a Pod without metadata.name"},
		"a YAML List's item that is not YAML, by its index and its line in the document": {
			input: "apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: Pod, metadata: {name: a}}\n- apiVersion: v1\n  kind: [Pod\n",
			err:   "document 1: items[1]: error converting YAML to JSON: yaml: line 6: did not find expected ',' or ']'"}, // as a whole decode says
		"an item that is not an object": {
			input: `{"kind": "List", "items": [` + podJSON("a") + `, "b"]}`,
			err:   `document 1: items[1]: expected an object (apiVersion, kind, metadata...), found "b"`},
		"a second JSON document that is not JSON": {
			input: podJSON("a") + "\n{\"kind\": ",
			err:   "document 2: unexpected EOF"},
		"a label YAML reads as a boolean, in the third document": {
			input: "apiVersion: v1\nkind: Pod\nmetadata: {name: a}\n---\n---\n# c\n---\napiVersion: v1\nkind: Pod\nmetadata: {name: b, labels: {legacy: on}}\n",
			err:   "document 3: Pod b: metadata.labels[legacy]: expected a string, found true (YAML reads"},
		"a JSON object whose items are null: an object, not an empty document": {
			input: `{"items": null}`, err: "document 1: an object without apiVersion"},
		"a document that is a list": {input: "- a\n- b\n", err: "document 1: expected an object (apiVersion, kind, metadata...), found a list"},
		"a kind List without items": {input: "apiVersion: v1\nkind: PodList\nmetadata: {name: x}\n", err: "document 1: a PodList without items"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var got []string
			err := preview.Stream(strings.NewReader(tc.input), tc.selected, func(o *unstructured.Unstructured) error {
				got = append(got, o.GetKind()+"/"+o.GetName()+" "+fieldsOf(o))
				return nil
			})
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one with %q (read %v)", err, tc.err, got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("read\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}

// fieldsOf names o's top-level fields, with the values of those besides
// apiVersion, kind and metadata.
func fieldsOf(o *unstructured.Unstructured) string {
	var out []string
	for _, k := range []string{"apiVersion", "kind", "metadata", "spec", "status", "items"} {
		switch v, ok := o.Object[k]; {
		case !ok:
		case k == "apiVersion" || k == "kind" || k == "metadata":
			out = append(out, k)
		default:
			out = append(out, k+":"+fmt.Sprint(v))
		}
	}
	return "[" + strings.Join(out, " ") + "]"
}

// Stream stops at an error of the function given each object, and returns
// it as it is, without the document's name.
func TestStreamReturnsTheCallersError(t *testing.T) {
	stop := errors.New("stop")
	n := 0
	err := preview.Stream(strings.NewReader(`{"items": [`+podJSON("a")+`, `+podJSON("b")+`]}`), nil, func(*unstructured.Unstructured) error {
		n++
		return stop
	})
	if err != stop || n != 1 { //nolint:errorlint // the error itself
		t.Errorf("error %v after %d objects, want %v after 1", err, n, stop)
	}
}
