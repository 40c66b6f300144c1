package preview_test

import (
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/metawatch/metawatch/pkg/config"
	"github.com/metawatch/metawatch/pkg/preview"
)

// managed is a managedFields entry of manager (operation op) owning the
// label keys and annotation keys, as YAML under metadata.
func managed(manager, op string, labels, annotations []string) string {
	set := func(keys []string) string {
		var fs []string
		for _, k := range keys {
			fs = append(fs, fmt.Sprintf(`"f:%s": {}`, k))
		}
		return "{" + strings.Join(fs, ", ") + "}"
	}
	return fmt.Sprintf("\n  - {manager: %s, operation: %s, apiVersion: v1, fieldsType: FieldsV1, "+
		`fieldsV1: {"f:metadata": {"f:labels": %s, "f:annotations": %s}}}`, manager, op, set(labels), set(annotations))
}

// podYAML is pod p in Namespace shop (given too, with team=red) with the
// labels and annotations (YAML flow maps) and managedFields entries.
func podYAML(labels, annotations string, entries ...string) string {
	pod := "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  namespace: shop\n  labels: " + labels + "\n  annotations: " + annotations
	if len(entries) > 0 {
		pod += "\n  managedFields:" + strings.Join(entries, "")
	}
	return pod + "\n---\napiVersion: v1\nkind: Namespace\nmetadata: {name: shop, labels: {team: red}}\n"
}

const setTier = "watches: [{kind: Pod}]\nrules: [{name: tier, kinds: [Pod], setLabels: {tier: gold}, setAnnotations: {note: x}}]\n"

// What the preview writes is what the controller would: a key is set only
// where its value differs and metawatch may take it; another manager's
// key with another value is a conflict unless the rule forces; a key
// metawatch owns that no rule wants is released; a removed key present
// is removed; each write says its rule and where its value comes from.
func TestChangesAreWhatTheControllerWouldWrite(t *testing.T) {
	theirs := managed("kubectl-label", "Update", []string{"tier"}, nil)
	cases := map[string]struct {
		config, objects string
		writes          []string // each Write as "map key action value (was) rule from"
		conflicts       []string // each Conflict as "map key want have manager"
		notes           int
	}{
		"absent keys are set, from the rule": {
			config: setTier, objects: podYAML("{}", "{}", managed("kubectl", "Update", nil, nil)),
			writes: []string{`labels tier set gold (absent) tier`, `annotations note set x (absent) tier`},
		},
		"keys already at the rule's value are not written": {
			config: setTier, objects: podYAML("{tier: gold}", "{note: x}", managed("metawatch", "Apply", []string{"tier"}, []string{"note"})),
		},
		"another manager's key with another value is a conflict": {
			config: setTier, objects: podYAML("{tier: silver}", "{note: x}", theirs),
			conflicts: []string{"labels tier gold silver kubectl-label"},
		},
		"with force, another manager's key is set": {
			config:  "watches: [{kind: Pod}]\nrules: [{name: tier, kinds: [Pod], force: true, setLabels: {tier: gold}}]\n",
			objects: podYAML("{tier: silver}", "{}", theirs),
			writes:  []string{`labels tier set gold ("silver") tier`},
		},
		"metawatch's own key by Update, not Apply, is another manager's": {
			config: setTier, objects: podYAML("{tier: silver}", "{note: x}", managed("metawatch", "Update", []string{"tier"}, nil)),
			conflicts: []string{"labels tier gold silver metawatch (Update)"},
		},
		"without managedFields a differing key is set, with a note": {
			config: setTier, objects: podYAML("{tier: silver}", "{note: x}"),
			writes: []string{`labels tier set gold ("silver") tier`}, notes: 1,
		},
		"a right value set at creation is adopted when metawatch does not own it": {
			config:  "watches: [{kind: Pod}]\nrules: [{name: tier, kinds: [Pod], atCreation: true, setLabels: {tier: gold}}]\n",
			objects: podYAML("{tier: gold}", "{}", managed("kube-apiserver", "Update", []string{"tier"}, nil)),
			writes:  []string{`labels tier adopt gold ("gold") tier`},
		},
		"a key metawatch owns that no rule wants is released": {
			config:  setTier,
			objects: podYAML("{tier: gold, old: o}", "{note: x, gone: z}", managed("metawatch", "Apply", []string{"tier", "old"}, []string{"note", "gone"})),
			writes:  []string{`labels old release  ("o") `, `annotations gone release  ("z") `},
		},
		"a removed key is removed when present, and nothing when absent": {
			config:  "watches: [{kind: Pod}]\nrules: [{name: drop, kinds: [Pod], removeLabels: [legacy, never]}]\n",
			objects: podYAML("{legacy: x}", "{}", managed("kubectl", "Update", []string{"legacy"}, nil)),
			writes:  []string{`labels legacy remove  ("x") drop`},
		},
		"a copied value says the Namespace it comes from": {
			config:  "watches: [{kind: Pod}]\nrules: [{name: copy, kinds: [Pod], copyFromNamespace: {labels: [team]}}]\n",
			objects: podYAML("{}", "{}", managed("kubectl", "Update", nil, nil)),
			writes:  []string{`labels team set red (absent) copy Namespace shop`},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r := reportsOf(t, tc.config, tc.objects, nil)[0]
			var writes, conflicts []string
			for _, w := range r.Writes {
				was := "absent"
				if w.Had {
					was = fmt.Sprintf("%q", w.Was)
				}
				writes = append(writes, strings.TrimSpace(fmt.Sprintf("%s %s %s %s (%s) %s %s", w.Map, w.Key, w.Action, w.Value, was, w.Rule, w.From)))
			}
			for _, c := range r.Conflicts {
				conflicts = append(conflicts, fmt.Sprintf("%s %s %s %s %s", c.Map, c.Key, c.Want, c.Have, c.Manager))
			}
			if fmt.Sprintf("%q", writes) != fmt.Sprintf("%q", trimmed(tc.writes)) {
				t.Errorf("writes\n  %q\nwant\n  %q", writes, trimmed(tc.writes))
			}
			if fmt.Sprint(conflicts) != fmt.Sprint(tc.conflicts) {
				t.Errorf("conflicts %q, want %q", conflicts, tc.conflicts)
			}
			if len(r.Notes) != tc.notes {
				t.Errorf("notes %q, want %d", r.Notes, tc.notes)
			}
			if r.Changes() != (len(tc.writes) > 0) || r.Offends() != (len(tc.conflicts) > 0) {
				t.Errorf("Changes() %v, Offends() %v; want %v, %v", r.Changes(), r.Offends(), len(tc.writes) > 0, len(tc.conflicts) > 0)
			}
		})
	}
}

func trimmed(lines []string) []string {
	var out []string
	for _, l := range lines {
		out = append(out, strings.TrimSpace(l))
	}
	return out
}

// reportsOf previews objects (YAML documents) with configYAML and limits
// (nil: the defaults), and returns the reports of the objects in order.
func reportsOf(t *testing.T, configYAML, objects string, limits *config.Guardrails) []preview.Report {
	t.Helper()
	conf, err := config.Parse([]byte(configYAML))
	if err != nil {
		t.Fatal(err)
	}
	// As metawatch check --objects reads them: with the fields the watches' field selectors read.
	var objs []*unstructured.Unstructured
	err = preview.Stream(strings.NewReader(objects), preview.SelectorFields(conf), func(o *unstructured.Unstructured) error {
		objs = append(objs, o)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	reports, err := preview.Preview(t.Context(), objs, preview.Options{Config: conf, Guardrails: limits})
	if err != nil {
		t.Fatal(err)
	}
	return reports
}
