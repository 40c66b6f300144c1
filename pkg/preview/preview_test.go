package preview_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/metawatch/metawatch/pkg/config"
	"github.com/metawatch/metawatch/pkg/preview"
)

const fuzzConfig = `
watches:
- kind: Pod
rules:
- {name: set, kinds: [Pod], match: {labelSelector: "!skip"}, setLabels: {tier: gold}, setAnnotations: {note: x}}
- {name: copy, kinds: [Pod], copyFromNamespace: {labels: [team]}}
- {name: drop, kinds: [Pod], removeLabels: [legacy]}
- {name: need, kinds: [Pod], requireLabels: [owner]}
`

// Applying what a preview says metawatch would write (as metawatch's
// apply: the keys it sets become its own) leaves nothing to write: the
// preview of the result is empty, and a second application changes nothing.
func FuzzApplyingThePreviewConverges(f *testing.F) {
	f.Add("tier=silver,legacy=1", "team=red", "tier,old", "team")
	f.Add("skip=1,old=x", "", "old", "")
	f.Add("", "team=blue", "", "")
	conf, err := config.Parse([]byte(fuzzConfig))
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, podLabels, nsLabels, mine, theirs string) {
		pod := object("Pod", "shop", "p", parse(podLabels), owners(mine, theirs))
		ns := object("Namespace", "", "shop", parse(nsLabels), nil)
		first := previewOf(t, conf, pod, ns)
		for _, w := range first.Writes {
			apply(pod, w)
		}
		second := previewOf(t, conf, pod, ns)
		if len(second.Writes) > 0 {
			t.Errorf("after applying %v, the preview still writes %v", first.Writes, second.Writes)
		}
		if fmt.Sprint(second.Conflicts) != fmt.Sprint(first.Conflicts) {
			t.Errorf("conflicts changed by applying the writes: %v, then %v", first.Conflicts, second.Conflicts)
		}
	})
}

func previewOf(t *testing.T, conf *config.Config, objs ...*unstructured.Unstructured) preview.Report {
	t.Helper()
	reports, err := preview.Preview(t.Context(), objs, preview.Options{Config: conf})
	if err != nil {
		t.Fatal(err)
	}
	return reports[0]
}

// apply does w as metawatch's apply would: a set key becomes metawatch's,
// a removed or released key goes.
func apply(obj *unstructured.Unstructured, w preview.Write) {
	m := obj.GetLabels()
	if w.Map == "annotations" {
		m = obj.GetAnnotations()
	}
	if m == nil {
		m = map[string]string{}
	}
	switch w.Action {
	case "set", "adopt":
		m[w.Key] = w.Value
		setOwner(obj, "metawatch", w.Map, w.Key, true)
	default:
		delete(m, w.Key)
		setOwner(obj, "metawatch", w.Map, w.Key, false)
	}
	if w.Map == "annotations" {
		obj.SetAnnotations(m)
	} else {
		obj.SetLabels(m)
	}
}

func parse(s string) map[string]string {
	out := map[string]string{}
	for _, kv := range strings.Split(s, ",") {
		if k, v, ok := strings.Cut(kv, "="); ok && k != "" {
			out[k] = v
		}
	}
	return out
}

// owners are managedFields where metawatch owns the labels mine and
// kubectl-label the labels theirs (comma-separated).
func owners(mine, theirs string) []metav1.ManagedFieldsEntry {
	var out []metav1.ManagedFieldsEntry
	for _, e := range []struct{ manager, keys string }{{"metawatch", mine}, {"kubectl-label", theirs}} {
		fields := map[string]any{}
		for _, k := range strings.Split(e.keys, ",") {
			if k != "" {
				fields["f:"+k] = map[string]any{}
			}
		}
		out = append(out, entry(e.manager, map[string]any{"f:labels": fields}))
	}
	return out
}

func entry(manager string, metadata map[string]any) metav1.ManagedFieldsEntry {
	raw, _ := json.Marshal(map[string]any{"f:metadata": metadata})
	op := metav1.ManagedFieldsOperationUpdate
	if manager == "metawatch" {
		op = metav1.ManagedFieldsOperationApply
	}
	return metav1.ManagedFieldsEntry{Manager: manager, Operation: op, APIVersion: "v1", FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(string(raw))}
}

// setOwner makes manager own (or not) key of what on obj.
func setOwner(obj *unstructured.Unstructured, manager, what, key string, owns bool) {
	entries := obj.GetManagedFields()
	for i, e := range entries {
		if e.Manager != manager {
			continue
		}
		var f map[string]map[string]map[string]any
		_ = json.Unmarshal(e.FieldsV1.GetRawBytes(), &f)
		if f == nil {
			f = map[string]map[string]map[string]any{}
		}
		if f["f:metadata"] == nil {
			f["f:metadata"] = map[string]map[string]any{}
		}
		if f["f:metadata"]["f:"+what] == nil {
			f["f:metadata"]["f:"+what] = map[string]any{}
		}
		if owns {
			f["f:metadata"]["f:"+what]["f:"+key] = map[string]any{}
		} else {
			delete(f["f:metadata"]["f:"+what], "f:"+key)
		}
		raw, _ := json.Marshal(f)
		entries[i].FieldsV1.SetRawBytes(raw)
	}
	obj.SetManagedFields(entries)
}

func object(kind, ns, name string, labels map[string]string, managed []metav1.ManagedFieldsEntry) *unstructured.Unstructured {
	o := &unstructured.Unstructured{}
	o.SetAPIVersion("v1")
	o.SetKind(kind)
	o.SetNamespace(ns)
	o.SetName(name)
	o.SetLabels(labels)
	o.SetManagedFields(managed)
	return o
}
