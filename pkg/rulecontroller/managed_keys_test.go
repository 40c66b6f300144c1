package rulecontroller_test

import (
	"fmt"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/metawatch/metawatch/pkg/rulecontroller"
	"github.com/metawatch/metawatch/pkg/testing/testkit"
)

// A key metawatch released itself (the Namespace lost it) and another field
// manager then set is that manager's, label or annotation: when the rule
// wants the key again, it is a conflict (an Event, no write), not a hand
// edit to force back.
func TestAKeyMetawatchReleasedIsNotTakenBackByForce(t *testing.T) {
	a, b := "a", "b"
	for name, kt := range testkit.KeyTypes {
		t.Run(name, func(t *testing.T) {
			ns := "released-" + name
			c := testkit.Populated(t, cp, ns, nil, 1)
			testkit.MergePatch(t, c, namespaceObject(ns), "kubectl-"+kt.Kubectl, kt.Patch("team", &a))
			gate := &testkit.StreamGate{Resource: "pods"}
			inst := startInstanceVia(t, fmt.Sprintf("watches:\n- kind: Pod\n  namespaces: [%s]\nrules:\n- name: released-team\n  kinds: [Pod]\n  copyFromNamespace: {%s: [team]}\n", ns, kt.Copy),
				tuning{}, gate.Wrap)
			team := func() (string, bool) { v, has := kt.Of(getPod(t, c, ns, "pod-0"))["team"]; return v, has }
			testkit.WaitFor(t, "the pod to get team=a", testkit.Timeout, func() bool { v, _ := team(); return v == a })
			// The write is in metawatch's cache too before the watch lags: a cache
			// that never saw team cannot release it (there is nothing to release in
			// what it sees) until the watch brings metawatch's own write.
			testkit.WaitFor(t, "metawatch's cache to see team=a", testkit.Timeout, func() bool { return cachedKey(t, inst, kt, ns, "pod-0", "team") == a })

			// The pod watch lags behind metawatch's own release, as watches do.
			gate.Pause()
			testkit.MergePatch(t, c, namespaceObject(ns), "kubectl-"+kt.Kubectl, kt.Patch("team", nil))
			testkit.WaitFor(t, "metawatch to release team", testkit.Timeout, func() bool { _, has := team(); return !has })
			gate.Resume()
			testkit.WaitFor(t, "metawatch's cache to see the release", testkit.Timeout, func() bool { return cachedKey(t, inst, kt, ns, "pod-0", "team") == "" })
			applyAs(t, c, kt, ns, "pod-0", "other-controller", fmt.Sprintf(`{"team":%q}`, b))
			testkit.MergePatch(t, c, namespaceObject(ns), "kubectl-"+kt.Kubectl, kt.Patch("team", &a))

			testkit.WaitFor(t, "a LabelConflict Event", testkit.Timeout, func() bool {
				return len(testkit.AggregateEvents(t, c, ns, rulecontroller.ReasonConflict, "released-team")) > 0
			})
			if v, _ := team(); v != b {
				t.Errorf("team is %q: metawatch took the %s another manager set after metawatch released it; want b kept", v, kt.Name)
			}
		})
	}
}

// Two controllers that both force one key, label or annotation: metawatch
// notices that the key is taken from it again and again, stops taking it
// back, and says so with a Warning Event and a metric, instead of fighting
// forever.
func TestTwoControllersForcingOneKeyDoNotFightForever(t *testing.T) {
	for name, kt := range testkit.KeyTypes {
		t.Run(name, func(t *testing.T) {
			ns := "fight-" + name
			c := testkit.Populated(t, cp, ns, nil, 1)
			fights := metricSince(t, "metawatch_ownership_fights_total", map[string]string{"rule": "fight-tier", "kind": "Pod"})
			inst := startInstance(t, fmt.Sprintf("watches:\n- kind: Pod\n  namespaces: [%s]\nrules:\n- {name: fight-tier, kinds: [Pod], %s: {tier: gold}, force: true}\n", ns, kt.Set), tuning{})
			tier := func() string { return kt.Of(getPod(t, c, ns, "pod-0"))["tier"] }
			testkit.WaitFor(t, "metawatch to set tier=gold", testkit.Timeout, func() bool { return tier() == "gold" })
			fought := func() bool {
				return len(testkit.AggregateEvents(t, c, ns, rulecontroller.ReasonOwnershipFight, "fight-tier")) > 0
			}

			// The rival: whenever tier is not silver, it force-applies silver; at most 20 times.
			takeovers := 0
			testkit.WaitFor(t, "metawatch to stop taking tier back, or 20 takeovers", testkit.Timeout, func() bool {
				if takeovers >= 20 {
					return true
				}
				if tier() != "silver" {
					forceApplyAs(t, c, kt, ns, "pod-0", "rival-controller", `{"tier":"silver"}`)
					takeovers++
					return false
				}
				return fought()
			})
			t.Logf("%ss: the rival took the key %d times; metawatch wrote %d times", kt.Name, takeovers, inst.writes.Load())
			testkit.WaitFor(t, "an OwnershipFight Event", testkit.Timeout, fought)
			if takeovers >= 20 {
				t.Errorf("metawatch took tier back after each of %d takeovers: the two controllers fight forever", takeovers)
			}
			if n := fights(); n != 1 {
				t.Errorf("metawatch_ownership_fights_total{rule=fight-tier} grew by %v, want 1", n)
			}
			if v := tier(); v != "silver" {
				t.Errorf("tier is %q after metawatch stopped fighting, want the rival's silver", v)
			}
		})
	}
}

// cachedKey is key of kt on a pod in the instance's cache; "" when it has
// none, or the pod is not cached.
func cachedKey(t *testing.T, inst *instance, kt testkit.KeyType, ns, name, key string) string {
	obj := podMetadata()
	if err := inst.cache.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, obj); err != nil {
		return ""
	}
	return kt.Of(obj)[key]
}
