package rulecontroller_test

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/metawatch/metawatch/pkg/rulecontroller"
	"github.com/metawatch/metawatch/pkg/testing/testkit"
)

// A key metawatch released itself (the Namespace lost it) and another field
// manager then set is that manager's: when the rule wants the key again, it is
// a conflict (an Event, no write), not a hand edit to force back.
func TestAKeyMetawatchReleasedIsNotTakenBackByForce(t *testing.T) {
	c := testkit.Populated(t, cp, "released", map[string]string{"team": "a"}, 1)
	gate := &testkit.StreamGate{Resource: "pods"}
	inst := startInstanceVia(t, "watches:\n- kind: Pod\n  namespaces: [released]\nrules:\n- name: released-team\n  kinds: [Pod]\n  copyFromNamespace: {labels: [team]}\n",
		settings{}, gate.Wrap)
	testkit.WaitFor(t, "the pod to get team=a", testkit.Timeout, func() bool { return getPod(t, c, "released", "pod-0").Labels["team"] == "a" })
	// The write is in metawatch's cache too before the watch lags: a cache
	// that never saw team cannot release it (there is nothing to release in
	// what it sees) until the watch brings metawatch's own write.
	testkit.WaitFor(t, "metawatch's cache to see team=a", testkit.Timeout, func() bool { return cachedTeam(t, inst, "released", "pod-0") == "a" })

	// The pod watch lags behind metawatch's own release, as watches do.
	gate.Pause()
	testkit.MergePatch(t, c, namespaceObject("released"), "kubectl-label", `{"metadata":{"labels":{"team":null}}}`)
	testkit.WaitFor(t, "metawatch to release team", testkit.Timeout, func() bool { _, has := getPod(t, c, "released", "pod-0").Labels["team"]; return !has })
	gate.Resume()
	testkit.WaitFor(t, "metawatch's cache to see the release", testkit.Timeout, func() bool { return cachedTeam(t, inst, "released", "pod-0") == "" })
	applyAs(t, c, "released", "pod-0", "other-controller", `{"team":"b"}`)
	testkit.MergePatch(t, c, namespaceObject("released"), "kubectl-label", `{"metadata":{"labels":{"team":"a"}}}`)

	testkit.WaitFor(t, "a LabelConflict Event", testkit.Timeout, func() bool {
		return len(testkit.Events(t, c, "released", "Pod", "pod-0", rulecontroller.ReasonConflict)) > 0
	})
	if team := getPod(t, c, "released", "pod-0").Labels["team"]; team != "b" {
		t.Errorf("team is %q: metawatch took the key another manager set after metawatch released it; want b kept", team)
	}
}

// Two controllers that both force one key: metawatch notices that the key is
// taken from it again and again, stops taking it back, and says so with a
// Warning Event and a metric, instead of fighting forever.
func TestTwoControllersForcingOneKeyDoNotFightForever(t *testing.T) {
	c := testkit.Populated(t, cp, "fight", nil, 1)
	inst := startInstance(t, "watches:\n- kind: Pod\n  namespaces: [fight]\nrules:\n- {name: fight-tier, kinds: [Pod], setLabels: {tier: gold}, force: true}\n", settings{})
	testkit.WaitFor(t, "metawatch to set tier=gold", testkit.Timeout, func() bool { return getPod(t, c, "fight", "pod-0").Labels["tier"] == "gold" })

	// The rival: whenever tier is not silver, it force-applies silver; at most 20 times.
	takeovers := 0
	deadline := time.Now().Add(testkit.Timeout)
	for takeovers < 20 && time.Now().Before(deadline) {
		if getPod(t, c, "fight", "pod-0").Labels["tier"] != "silver" {
			forceApplyAs(t, "fight", "pod-0", "rival-controller", `{"tier":"silver"}`)
			takeovers++
			continue
		}
		if len(testkit.Events(t, c, "fight", "Pod", "pod-0", rulecontroller.ReasonOwnershipFight)) > 0 {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("the rival took the key %d times; metawatch wrote %d times", takeovers, inst.writes.Load())
	testkit.WaitFor(t, "an OwnershipFight Event", testkit.Timeout, func() bool {
		return len(testkit.Events(t, c, "fight", "Pod", "pod-0", rulecontroller.ReasonOwnershipFight)) > 0
	})
	if takeovers >= 20 {
		t.Errorf("metawatch took tier back after each of %d takeovers: the two controllers fight forever", takeovers)
	}
	if n := testkit.Metric(t, "metawatch_ownership_fights_total", map[string]string{"rule": "fight-tier", "kind": "Pod"}); n != 1 {
		t.Errorf("metawatch_ownership_fights_total{rule=fight-tier} = %v, want 1", n)
	}
	if tier := getPod(t, c, "fight", "pod-0").Labels["tier"]; tier != "silver" {
		t.Errorf("tier is %q after metawatch stopped fighting, want the rival's silver", tier)
	}
}

// cachedTeam is the team label of a pod in the instance's cache; "" when
// it has none, or the pod is not cached.
func cachedTeam(t *testing.T, inst *instance, ns, name string) string {
	obj := podMetadata()
	if err := inst.cache.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, obj); err != nil {
		return ""
	}
	return obj.Labels["team"]
}

func forceApplyAs(t *testing.T, ns, name, manager, labelsJSON string) {
	t.Helper()
	c := testkit.Client(t, cp.Config)
	manifest := `{"apiVersion":"v1","kind":"Pod","metadata":{"namespace":"` + ns + `","name":"` + name + `","labels":` + labelsJSON + `}}`
	pod := getPod(t, c, ns, name)
	if err := c.Patch(t.Context(), pod, client.RawPatch(types.ApplyPatchType, []byte(manifest)), client.FieldOwner(manager), client.ForceOwnership); err != nil {
		t.Fatal(err)
	}
}
