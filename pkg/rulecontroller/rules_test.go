package rulecontroller_test

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/metawatch/metawatch/pkg/rulecontroller"
	"github.com/metawatch/metawatch/pkg/settings"
	"github.com/metawatch/metawatch/pkg/testing/controlplane"
	"github.com/metawatch/metawatch/pkg/testing/testkit"
)

// The classic "label the nodes that joined a certain way" controller: matching
// Nodes are labelled, the others are left alone.
func TestNodeRuleLabelsOnlyMatchingNodes(t *testing.T) {
	controlplane.SkipIfShort(t)
	c := testkit.Client(t, cp.Config)
	for name, capacity := range map[string]string{"node-spot": "spot", "node-on-demand": "on-demand"} {
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"node.kubernetes.io/capacity-type": capacity}}}
		if err := c.Create(t.Context(), node); err != nil {
			t.Fatal(err)
		}
	}
	initial := reconcilesOf(t, "node")
	startInstance(t, `
watches:
- kind: Node
rules:
- name: spot-nodes
  kinds: [Node]
  match: {labelSelector: "node.kubernetes.io/capacity-type=spot"}
  setLabels: {example.com/spot: "true"}
`, tuning{})
	testkit.WaitFor(t, "the spot node to be labelled", testkit.Timeout, func() bool { return nodeLabels(t, "node-spot")["example.com/spot"] == "true" })
	testkit.WaitFor(t, "both nodes to be reconciled", testkit.Timeout, func() bool { return reconcilesOf(t, "node") >= initial+2 })
	if _, has := nodeLabels(t, "node-on-demand")["example.com/spot"]; has {
		t.Error("the on-demand node was labelled example.com/spot")
	}
	if n := testkit.Metric(t, "metawatch_rule_writes_total", map[string]string{"rule": "spot-nodes", "result": "applied"}); n != 1 {
		t.Errorf("spot-nodes wrote %v times, want once", n)
	}
}

func nodeLabels(t *testing.T, name string) map[string]string {
	t.Helper()
	var node corev1.Node
	if err := testkit.Client(t, cp.Config).Get(t.Context(), client.ObjectKey{Name: name}, &node); err != nil {
		t.Fatal(err)
	}
	return node.Labels
}

// A key edited by hand on a key a rule owns is put back; removing a rule
// (here by a restart with the new configuration) removes the keys it set,
// in both maps, and only those: for labels, and for annotations.
func TestHandEditIsPutBackAndRemovedRulesCleanUp(t *testing.T) {
	yes, bronze := "yes", "bronze"
	for name, kt := range testkit.KeyTypes {
		t.Run(name, func(t *testing.T) {
			other := otherKeyType(kt) // the removed rule writes there too
			ns := "owned-" + name
			c := testkit.Populated(t, cp, ns, nil, 3)
			testkit.MergePatch(t, c, podObject(ns, "pod-0"), "kubectl-"+kt.Kubectl, kt.Patch("by-hand", &yes))
			watches := fmt.Sprintf("watches:\n- kind: Pod\n  namespaces: [%s]\nrules:\n- {name: owned-tier, kinds: [Pod], %s: {tier: gold}}\n", ns, kt.Set)
			zoneRule := fmt.Sprintf("- {name: owned-zone, kinds: [Pod], %s: {zone: west}, %s: {example.com/zone-owner: net}}\n", kt.Set, other.Set)
			inst := startInstance(t, watches+zoneRule, tuning{})
			both := func(_ string, m map[string]string) bool { return m["tier"] == "gold" && m["zone"] == "west" }
			waitAllPodKeys(t, c, kt, "both rules to apply", []string{ns}, both)

			testkit.MergePatch(t, c, podObject(ns, "pod-1"), "kubectl-"+kt.Kubectl, kt.Patch("tier", &bronze))
			testkit.WaitFor(t, "the hand-edited tier to be put back", testkit.Timeout, func() bool { return kt.Of(getPod(t, c, ns, "pod-1"))["tier"] == "gold" })
			inst.stop()

			startInstance(t, watches, tuning{})
			waitAllPodKeys(t, c, kt, "the removed rule's "+kt.Name+" to go", []string{ns}, func(_ string, m map[string]string) bool {
				_, zone := m["zone"]
				return !zone
			})
			for _, name := range []string{"pod-0", "pod-1", "pod-2"} {
				pod := getPod(t, c, ns, name)
				if kt.Of(pod)["tier"] != "gold" || pod.Labels["app"] != "web" {
					t.Errorf("%s lost a key it should keep: labels %v, annotations %v", name, pod.Labels, pod.Annotations)
				}
				if _, has := other.Of(pod)["example.com/zone-owner"]; has {
					t.Errorf("%s kept the removed rule's %s", name, other.Name)
				}
			}
			if m := kt.Of(getPod(t, c, ns, "pod-0")); m["by-hand"] != "yes" {
				t.Errorf("pod-0 lost its hand-set %s: %v", kt.Name, m)
			}
		})
	}
}

// otherKeyType is the key type kt is not.
func otherKeyType(kt testkit.KeyType) testkit.KeyType {
	for _, o := range testkit.KeyTypes {
		if o.Field != kt.Field {
			return o
		}
	}
	panic("one key type only")
}

// A key another field manager owns with another value is not overwritten: one
// occurrence of the rule's aggregate LabelConflict Event in the namespace,
// one count. With force: true, metawatch takes it.
func TestConflictWithAnotherManager(t *testing.T) {
	c := testkit.Populated(t, cp, "conflict", nil, 1)
	applyAs(t, c, testkit.KeyTypes["labels"], "conflict", "pod-0", "other-controller", `{"tier":"silver"}`)
	rule := "watches:\n- kind: Pod\n  namespaces: [conflict]\nrules:\n- {name: conflict-tier, kinds: [Pod], setLabels: {tier: gold, zone: west}%s}\n"

	inst := startInstance(t, strings.Replace(rule, "%s", "", 1), tuning{})
	testkit.WaitFor(t, "a LabelConflict Event", testkit.Timeout, func() bool {
		return len(testkit.AggregateEvents(t, c, "conflict", rulecontroller.ReasonConflict, "conflict-tier")) > 0
	})
	testkit.WaitFor(t, "the other key to be applied", testkit.Timeout, func() bool { return getPod(t, c, "conflict", "pod-0").Labels["zone"] == "west" })
	if tier := getPod(t, c, "conflict", "pod-0").Labels["tier"]; tier != "silver" {
		t.Errorf("tier is %q, want the other manager's silver kept", tier)
	}
	if n := testkit.Metric(t, "metawatch_rule_conflicts_total", map[string]string{"rule": "conflict-tier"}); n != 1 {
		t.Errorf("%v conflicts counted, want 1", n)
	}
	for result, want := range map[string]float64{"conflict": 1, "applied": 1} { // tier yielded, zone applied
		if n := testkit.Metric(t, "metawatch_rule_writes_total", map[string]string{"rule": "conflict-tier", "result": result}); n != want {
			t.Errorf("metawatch_rule_writes_total{result=%q} = %v, want %v", result, n, want)
		}
	}
	events := testkit.AggregateEvents(t, c, "conflict", rulecontroller.ReasonConflict, "conflict-tier")
	if len(events) != 1 || events[0].Series != nil || !strings.Contains(events[0].Note, `pod-0 (label tier="gold"`) || events[0].Regarding.Kind != "Namespace" {
		t.Errorf("want exactly one LabelConflict Event regarding the Namespace, naming pod-0 and tier=gold, got %+v", events)
	}
	if note := events[0].Note; !strings.Contains(note, `field manager "other-controller"`) || strings.Contains(note, "silver") {
		t.Errorf("LabelConflict Event %q: want it to name the field manager other-controller and not carry its value silver", note)
	}
	held := map[string]string{"rule": "conflict-tier", "kind": "Pod", "namespace": "conflict", "reason": "conflict"}
	if n := testkit.Metric(t, "metawatch_rule_objects_off", held); n != 1 {
		t.Errorf("metawatch_rule_objects_off%v = %v, want 1 (pod-0's tier is held by another manager)", held, n)
	}
	testkit.MergePatch(t, c, getPod(t, c, "conflict", "pod-0"), "other-controller", `{"metadata":{"labels":{"tier":"gold"}}}`) // it agrees now: nothing is held
	testkit.WaitFor(t, "the count of objects held to go", testkit.Timeout, func() bool { return testkit.Metric(t, "metawatch_rule_objects_off", held) == 0 })
	inst.stop()

	startInstance(t, strings.Replace(rule, "%s", ", force: true", 1), tuning{})
	testkit.MergePatch(t, c, getPod(t, c, "conflict", "pod-0"), "other-controller", `{"metadata":{"labels":{"tier":"silver"}}}`)
	testkit.WaitFor(t, "force to take the key", testkit.Timeout, func() bool { return getPod(t, c, "conflict", "pod-0").Labels["tier"] == "gold" })
}

// --dry-run computes everything and writes nothing; the log and the metric say what would change.
func TestDryRunWritesNothing(t *testing.T) {
	c := testkit.Populated(t, cp, "dry", nil, 4)
	testkit.MergePatch(t, c, getPod(t, c, "dry", "pod-0"), "kubectl-label", `{"metadata":{"labels":{"legacy":"1"}}}`)
	inst := startInstance(t, `
watches:
- kind: Pod
  namespaces: [dry]
rules:
- {name: dry-tier, kinds: [Pod], setLabels: {tier: gold}}
- {name: dry-cleanup, kinds: [Pod], removeLabels: [legacy]}
`, tuned(func(s *settings.Settings) { s.DryRun = true }))
	testkit.WaitFor(t, "4 dry-run applies", testkit.Timeout, func() bool {
		return testkit.Metric(t, "metawatch_rule_writes_total", map[string]string{"rule": "dry-tier", "result": "dry-run"}) >= 4
	})
	testkit.WaitFor(t, "1 dry-run removal", testkit.Timeout, func() bool {
		return testkit.Metric(t, "metawatch_rule_writes_total", map[string]string{"rule": "dry-cleanup", "result": "dry-run"}) >= 1
	})
	if n := inst.writes.Load(); n != 0 {
		t.Errorf("--dry-run made %d write requests, want 0", n)
	}
	if l := getPod(t, c, "dry", "pod-0").Labels; l["legacy"] != "1" || l["tier"] != "" {
		t.Errorf("--dry-run changed pod-0: %v", l)
	}
	if got := logs.matching(`"msg":"dry run: would apply"`, `"namespace":"dry"`, `"setLabels":{"tier":"gold"}`); len(got) < 4 {
		t.Errorf("%d dry-run apply log lines, want one per pod (4)", len(got))
	}
	if got := logs.matching(`"msg":"dry run: would remove"`, `"name":"pod-0"`, `"labels":["legacy"]`); len(got) != 1 {
		t.Errorf("%d dry-run remove log lines for pod-0, want 1", len(got))
	}
}

// requireLabels: a gauge of the objects violating, and one occurrence of the
// rule's aggregate Event in the namespace per object when it starts
// violating, not per change.
func TestRequireLabelsAudits(t *testing.T) {
	c := testkit.Populated(t, cp, "audit", nil, 3)
	folded := func() float64 {
		return testkit.Metric(t, "metawatch_events_folded_total", map[string]string{"reason": rulecontroller.ReasonMissingRequired})
	}
	foldedBefore := folded()
	testkit.MergePatch(t, c, getPod(t, c, "audit", "pod-0"), "kubectl-label", `{"metadata":{"labels":{"owner":"alice"}}}`)
	inst := startInstance(t, "watches:\n- kind: Pod\n  namespaces: [audit]\nrules:\n- {name: audit-owner, kinds: [Pod], requireLabels: [owner]}\n", tuning{})
	violations := func() float64 {
		return testkit.Metric(t, "metawatch_rule_violations", map[string]string{"rule": "audit-owner"})
	}
	testkit.WaitFor(t, "2 violations", testkit.Timeout, func() bool { return violations() == 2 })
	off := map[string]string{"rule": "audit-owner", "kind": "Pod", "namespace": "audit", "reason": "violation"}
	if n := testkit.Metric(t, "metawatch_rule_objects_off", off); n != 2 {
		t.Errorf("metawatch_rule_objects_off%v = %v, want 2", off, n)
	}
	testkit.MergePatch(t, c, getPod(t, c, "audit", "pod-1"), "kubectl-label", `{"metadata":{"labels":{"owner":"bob","unrelated":"x"}}}`)
	testkit.WaitFor(t, "1 violation", testkit.Timeout, func() bool {
		return violations() == 1 && testkit.Metric(t, "metawatch_rule_objects_off", off) == 1
	})
	testkit.MergePatch(t, c, getPod(t, c, "audit", "pod-2"), "kubectl-label", `{"metadata":{"labels":{"unrelated":"y"}}}`)
	testkit.WaitFor(t, "pod-2's change to be reconciled", testkit.Timeout, func() bool {
		return len(logs.matching(`"name":"pod-2"`, `"unrelated":"y"`)) > 0
	})
	// Folded as they happen: pod-1 and pod-2 started violating, once each.
	if n := folded() - foldedBefore; n != 2 {
		t.Errorf("%v %s occurrences folded, want 2 (pod-1 and pod-2, once each)", n, rulecontroller.ReasonMissingRequired)
	}
	testkit.WaitFor(t, "the aggregate Event to count pod-1 and pod-2", testkit.Timeout, func() bool {
		return testkit.Occurrences(testkit.AggregateEvents(t, c, "audit", rulecontroller.ReasonMissingRequired, "audit-owner")) == 2
	})
	events := testkit.AggregateEvents(t, c, "audit", rulecontroller.ReasonMissingRequired, "audit-owner")
	if len(events) != 1 || !strings.Contains(events[0].Note, "pod-1 (missing labels owner)") || strings.Contains(events[0].Note, "pod-0") {
		t.Errorf("want one Event in namespace audit naming pod-1 and not pod-0, got %+v", events)
	}
	if n := inst.writes.Load(); n != 0 {
		t.Errorf("an audit-only rule made %d writes, want 0", n)
	}
}

// A conflict Event carries the other manager's value only when the operator
// allows it (--events-include-values), and never for an annotation of a
// Secret, whose value may be the Secret's data (last-applied-configuration).
func TestConflictEventsCarryOtherValuesOnlyWhenAllowed(t *testing.T) {
	const ns = "conflict-values"
	c := testkit.Populated(t, cp, ns, nil, 1)
	applyAs(t, c, testkit.KeyTypes["labels"], ns, "pod-0", "other-controller", `{"tier":"silver"}`)
	secret := fmt.Sprintf(`{"apiVersion":"v1","kind":"Secret","metadata":{"namespace":%q,"name":"creds","annotations":{"example.com/note":"s3cr3t"}}}`, ns)
	if err := c.Patch(t.Context(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "creds"}},
		client.RawPatch("application/apply-patch+yaml", []byte(secret)), client.FieldOwner("other-controller")); err != nil {
		t.Fatal(err)
	}
	startInstance(t, `watches:
- kind: Pod
  namespaces: [conflict-values]
- kind: Secret
  namespaces: [conflict-values]
rules:
- {name: tier, kinds: [Pod], setLabels: {tier: gold}}
- {name: note, kinds: [Secret], setAnnotations: {example.com/note: mine}}
`, tuned(func(s *settings.Settings) { s.EventValues = true }))
	tests := map[string]struct {
		kind, rule, value string
		carried           bool
	}{
		"a Pod's label: the value, as allowed":   {"Pod", "tier", "silver", true},
		"a Secret's annotation: never the value": {"Secret", "note", "s3cr3t", false},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			testkit.WaitFor(t, "a LabelConflict Event on the "+tc.kind, testkit.Timeout, func() bool {
				return len(testkit.AggregateEvents(t, c, ns, rulecontroller.ReasonConflict, tc.rule)) > 0
			})
			note := testkit.AggregateEvents(t, c, ns, rulecontroller.ReasonConflict, tc.rule)[0].Note
			if strings.Contains(note, tc.value) != tc.carried || !strings.Contains(note, `field manager "other-controller"`) {
				t.Errorf("Event %q: carries %q = %v, want %v; it must name the field manager other-controller", note, tc.value, strings.Contains(note, tc.value), tc.carried)
			}
		})
	}
}
