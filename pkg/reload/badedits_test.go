package reload_test

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/metawatch/metawatch/pkg/testing/controlplane"
	"github.com/metawatch/metawatch/pkg/testing/testkit"
)

const goodConfig = `watches:
- kind: Pod
  namespaces: [live]
rules:
- {name: live-tier, kinds: [Pod], setLabels: {tier: gold}}
`

// Bad edits applied live with kubectl are each rejected with the field path in
// an InvalidConfig Event, and the running generation keeps handling changes.
func TestBadEditsKeepTheLastGoodGeneration(t *testing.T) {
	controlplane.SkipIfShort(t)
	c := testkit.Client(t, cp.Config)
	testkit.Namespace(t, c, "live", nil)
	kubectlApply(t, selectors("live", goodConfig))
	inst := startInstance(t, cp.Config, "live/selectors")
	testkit.Pod(t, c, "live", "p-start", nil)
	testkit.WaitFor(t, "the good configuration to label p-start", testkit.Timeout, func() bool { return podLabel(t, c, "live", "p-start", "tier") == "gold" })
	generation := testkit.Metric(t, "metawatch_config_generation", nil)

	for i, edit := range badEdits() {
		t.Run(edit.name, func(t *testing.T) {
			kubectlApply(t, edit.manifest)
			testkit.WaitFor(t, "an InvalidConfig Event with "+edit.want, testkit.Timeout, func() bool { return eventWith(t, c, "live", "InvalidConfig", edit.want) })
			if got := testkit.Metric(t, "metawatch_config_last_reload_successful", nil); got != 0 {
				t.Errorf("metawatch_config_last_reload_successful = %v after a bad edit, want 0", got)
			}
			// A pod created and a label change made while the bad configuration
			// sits in the ConfigMap: the running generation labels the pod, then
			// puts back the tier label removed by hand (on a pod of its own each
			// time: a key removed again and again on one object is a fight,
			// which metawatch leaves to the other side).
			pod, color := fmt.Sprintf("p-%d", i), fmt.Sprintf("c%d", i)
			testkit.Pod(t, c, "live", pod, nil)
			testkit.WaitFor(t, "the running generation to label "+pod, testkit.Timeout, func() bool { return podLabel(t, c, "live", pod, "tier") == "gold" })
			testkit.MergePatch(t, c, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "live", Name: pod}}, "kubectl-label", fmt.Sprintf(`{"metadata":{"labels":{"tier":null,"color":%q}}}`, color))
			testkit.WaitFor(t, "the running generation to handle the label change", testkit.Timeout, func() bool {
				return podLabel(t, c, "live", pod, "color") == color && podLabel(t, c, "live", pod, "tier") == "gold"
			})
		})
	}
	if got := testkit.Metric(t, "metawatch_config_generation", nil); got != generation {
		t.Errorf("metawatch_config_generation went from %v to %v through bad edits only", generation, got)
	}

	kubectl(t, "delete", "configmap", "-n", "live", "selectors")
	testkit.Pod(t, c, "live", "p-deleted", nil)
	testkit.WaitFor(t, "the running generation to label a pod after the ConfigMap was deleted", testkit.Timeout, func() bool {
		return podLabel(t, c, "live", "p-deleted", "tier") == "gold"
	})
	kubectlApply(t, selectors("live", goodConfig+"- {name: live-zone, kinds: [Pod], setLabels: {zone: west}}\n"))
	testkit.WaitFor(t, "a valid edit to take effect", testkit.Timeout, func() bool { return podLabel(t, c, "live", "p-deleted", "zone") == "west" })
	if got := testkit.Metric(t, "metawatch_config_generation", nil); got != generation+1 {
		t.Errorf("metawatch_config_generation = %v after one valid edit, want %v", got, generation+1)
	}
	if r := inst.readiness(); r != "ok" {
		t.Errorf("/readyz/configuration = %q, want ok", r)
	}
}

type badEdit struct{ name, manifest, want string }

func badEdits() []badEdit {
	podWatch := "watches:\n- kind: Pod\n  namespaces: [live]\n"
	edits := []badEdit{
		{"bad YAML", "watches: [kind: Pod\n", "decoding configuration"},
		{"unknown field", "watches:\n- kind: Pod\n  labelSelctor: app=web\n", `unknown field "watches[0].labelSelctor"`},
		{"bad label selector", "watches:\n- kind: Pod\n  labelSelector: 'team in (a'\n", `watches[0].labelSelector: Invalid value: "team in (a"`},
		{"bad field selector", "watches:\n- kind: Pod\n  fieldSelector: status.phase\n", `watches[0].fieldSelector: Invalid value: "status.phase"`},
		{"field selector the server rejects", "watches:\n- kind: Pod\n  fieldSelector: spec.priority=1\n", `watches[0].fieldSelector "spec.priority=1"`},
		{"unknown kind", "watches:\n- kind: Podz\n", `watches[0].kind: Invalid value: "Podz"`},
		{"duplicate kind", podWatch + "- kind: Pod\n", `watches[1].kind: Duplicate value: "Pod"`},
		{"invalid namespace", "watches:\n- kind: Pod\n  namespaces: [Live]\n", `watches[0].namespaces[0]: Invalid value: "Live"`},
		{"namespaces on a cluster-scoped kind", "watches:\n- kind: Node\n  namespaces: [live]\n", "watches[0].namespaces"},
		{"duplicate rule name", podWatch + "rules:\n- {name: r, kinds: [Pod], setLabels: {a: b}}\n- {name: r, kinds: [Pod], setLabels: {c: d}}\n", `rules[1].name: Duplicate value: "r"`},
		{"conflicting rules", podWatch + "rules:\n- {name: r1, kinds: [Pod], setLabels: {tier: gold}}\n- {name: r2, kinds: [Pod], setLabels: {tier: silver}}\n", "rules[1].setLabels[tier]"},
		{"invalid label value", podWatch + "rules:\n- {name: r, kinds: [Pod], setLabels: {tier: 'not valid!'}}\n", `rules[0].setLabels[tier]: Invalid value: "not valid!"`},
		{"a rule on an unwatched kind", podWatch + "rules:\n- {name: r, kinds: [Node], setLabels: {a: b}}\n", `rules[0].kinds[0]: Invalid value: "Node": not a watched kind`},
		{"a rule that would loop", "watches:\n- kind: Pod\n  namespaces: [live]\n  labelSelector: '!skip'\nrules:\n- {name: r, kinds: [Pod], setLabels: {skip: 'yes'}}\n", "rules[0].setLabels[skip]"},
		{"no watches", "watches: []\n", "watches: Required value"},
		{"an empty configuration", "", "configuration is empty"},
	}
	for i := range edits {
		edits[i].manifest = selectors("live", edits[i].manifest)
	}
	return append(edits,
		badEdit{"a ConfigMap without the data key", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: selectors, namespace: live}\ndata:\n  config.yml: |\n    watches: [{kind: Pod}]\n", `has no data key "config.yaml"`},
	)
}
