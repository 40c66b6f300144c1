package preview_test

import (
	"strings"
	"testing"

	"github.com/metawatch/metawatch/pkg/preview"
)

func TestReadTakesWhatKubectlWrites(t *testing.T) {
	cases := map[string]struct {
		input string
		want  []string // kind/name of each object read
		err   string
	}{
		"several YAML documents, one empty": {
			input: "apiVersion: v1\nkind: Pod\nmetadata: {name: a}\n---\n---\napiVersion: v1\nkind: Node\nmetadata: {name: node-1}\n",
			want:  []string{"Pod/a", "Node/node-1"}},
		"a List, as kubectl get -o yaml writes": {
			input: "apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: Pod, metadata: {name: a}}\n- {apiVersion: apps/v1, kind: Deployment, metadata: {name: d}}\n",
			want:  []string{"Pod/a", "Deployment/d"}},
		"JSON, as kubectl get -o json writes": {
			input: `{"apiVersion":"v1","kind":"PodList","items":[{"apiVersion":"v1","kind":"Pod","metadata":{"name":"a"}}]}`,
			want:  []string{"Pod/a"}},
		"an object without a kind":        {input: "apiVersion: v1\nmetadata: {name: a}\n", err: "document 1: an object without kind: each object needs apiVersion, kind and metadata.name"},
		"an object without an apiVersion": {input: "kind: Pod\nmetadata: {name: a}\n", err: "document 1: an object without apiVersion"},
		"a name YAML reads as a boolean":  {input: "apiVersion: v1\nkind: Pod\nmetadata: {name: n}\n", err: "document 1: a Pod whose metadata.name is false (YAML reads"},
		"a label value YAML reads as a boolean": {
			input: "apiVersion: v1\nkind: Pod\nmetadata: {name: a, labels: {legacy: on}}\n", err: "document 1: Pod a: metadata.labels[legacy]: expected a string, found true"},
		"a List item without a name": {
			input: "apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: Pod, metadata: {name: a}}\n- {apiVersion: v1, kind: Pod, metadata: {}}\n",
			err:   "document 1: items[1]: a Pod without metadata.name"},
		"an object without a name": {input: "apiVersion: v1\nkind: Pod\nmetadata: {}\n", err: "document 1: a Pod without metadata.name"},
		"not YAML":                 {input: "a: [\n", err: "document 1"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			objs, err := preview.Read(strings.NewReader(tc.input))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one with %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, o := range objs {
				got = append(got, o.GetKind()+"/"+o.GetName())
			}
			if strings.Join(got, " ") != strings.Join(tc.want, " ") {
				t.Errorf("read %v, want %v", got, tc.want)
			}
		})
	}
}
