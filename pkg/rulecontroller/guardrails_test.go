package rulecontroller_test

import (
	"fmt"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/metawatch/metawatch/pkg/config"
	"github.com/metawatch/metawatch/pkg/rulecontroller"
	"github.com/metawatch/metawatch/pkg/testing/controlplane"
	"github.com/metawatch/metawatch/pkg/testing/testkit"
)

// After the operator narrows --writable-kinds to Pod, an audit-only rule on
// Deployments keeps a reconciler on them: the keys an earlier run set there
// stay, and no write reaches a Deployment (before, each was released: one
// write per Deployment).
func TestAKindNoLongerWritableKeepsItsKeys(t *testing.T) {
	controlplane.SkipIfShort(t)
	c := testkit.Client(t, cp.Config)
	ns := "narrowed-kinds"
	if err := c.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if err := c.Create(t.Context(), deployment(ns, fmt.Sprintf("web-%d", i), nil, nil)); err != nil {
			t.Fatal(err)
		}
	}
	wide := limitsWriting("Pod", "Deployment")
	first := startInstance(t, fmt.Sprintf("watches:\n- kind: Deployment\n  namespaces: [%s]\nrules:\n- {name: team, kinds: [Deployment], setLabels: {team: shop}}\n", ns),
		settings{Wiring: rulecontroller.Wiring{Limits: &wide}})
	waitDeployments(t, c, ns, "the team label on every Deployment", func(l map[string]string) bool { return l["team"] == "shop" })
	first.stop()

	narrow := limitsWriting("Pod")
	second := startInstance(t, fmt.Sprintf("watches:\n- kind: Deployment\n  namespaces: [%s]\nrules:\n- {name: owner, kinds: [Deployment], requireLabels: [owner]}\n", ns),
		settings{Wiring: rulecontroller.Wiring{Limits: &narrow}})
	testkit.WaitFor(t, "every Deployment audited", testkit.Timeout, func() bool {
		return testkit.Metric(t, "metawatch_rule_violations", map[string]string{"rule": "owner", "kind": "Deployment.apps"}) == 3
	})
	left := map[string]string{"kind": "Deployment.apps", "reason": config.RefusedKind}
	testkit.WaitFor(t, "the team labels counted as left", testkit.Timeout, func() bool { return testkit.Metric(t, "metawatch_keys_left_by_guardrail", left) == 3 })
	waitDeployments(t, c, ns, "the team label still on every Deployment", func(l map[string]string) bool { return l["team"] == "shop" })
	if n := second.writes.Load(); n != 0 {
		t.Errorf("metawatch wrote %d times to Deployments it may no longer write", n)
	}
}

// A key metawatch owns that no rule wants any more, and that the operator
// has since protected, is kept at its value, even by an apply that writes
// other keys (leaving it out of the apply would delete it).
func TestAProtectedKeyIsNotReleased(t *testing.T) {
	controlplane.SkipIfShort(t)
	ns := "protected-release"
	c := testkit.Populated(t, cp, ns, nil, 3)
	open := limitsWriting("Pod")
	open.ProtectedKeys = nil
	first := startInstance(t, fmt.Sprintf("watches:\n- kind: Pod\n  namespaces: [%s]\nrules:\n- {name: both, kinds: [Pod], setLabels: {team: a, tier: gold}}\n", ns),
		settings{Wiring: rulecontroller.Wiring{Limits: &open}})
	waitAllPods(t, c, "both labels", []string{ns}, func(_ string, l map[string]string) bool { return l["team"] == "a" && l["tier"] == "gold" })
	first.stop()

	protected := limitsWriting("Pod")
	protected.ProtectedKeys = []string{"team"}
	startInstance(t, fmt.Sprintf("watches:\n- kind: Pod\n  namespaces: [%s]\nrules:\n- {name: tier, kinds: [Pod], setLabels: {tier: gold, zone: west}}\n", ns),
		settings{Wiring: rulecontroller.Wiring{Limits: &protected}})
	waitAllPods(t, c, "the new zone label", []string{ns}, func(_ string, l map[string]string) bool { return l["zone"] == "west" })
	waitAllPods(t, c, "the protected team label kept", []string{ns}, func(_ string, l map[string]string) bool { return l["team"] == "a" && l["tier"] == "gold" })
	left := map[string]string{"kind": "Pod", "reason": config.RefusedProtected}
	testkit.WaitFor(t, "the team labels counted as left", testkit.Timeout, func() bool { return testkit.Metric(t, "metawatch_keys_left_by_guardrail", left) == 3 })
}

// limitsWriting are the default limits with kinds writable.
func limitsWriting(kinds ...string) config.Limits {
	l := config.DefaultLimits()
	l.WritableKinds = kinds
	return l
}

func waitDeployments(t *testing.T, c client.Client, ns, what string, ok func(map[string]string) bool) {
	t.Helper()
	testkit.WaitFor(t, what, testkit.Timeout, func() bool {
		var list appsv1.DeploymentList
		if err := c.List(t.Context(), &list, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		for _, d := range list.Items {
			if !ok(d.Labels) {
				return false
			}
		}
		return len(list.Items) > 0
	})
}

// Keys metawatch owns on objects the operator has since put outside the
// write scope are counted as left from the start, without waiting for an
// update of each object, and nothing is written there.
func TestKeysOutsideTheWriteScopeAreCountedAtStart(t *testing.T) {
	controlplane.SkipIfShort(t)
	ns := "scope-left"
	c := testkit.Populated(t, cp, ns, nil, 3)
	conf := fmt.Sprintf("watches:\n- kind: Pod\n  namespaces: [%s]\nrules:\n- {name: tier, kinds: [Pod], setLabels: {tier: gold}}\n", ns)
	first := startInstance(t, conf, settings{})
	waitAllPods(t, c, "the tier label", []string{ns}, func(_ string, l map[string]string) bool { return l["tier"] == "gold" })
	first.stop()

	excluded := limitsWriting("Pod")
	excluded.WriteScope.ExcludeNamespaces = []string{ns}
	second := startInstance(t, conf, settings{Wiring: rulecontroller.Wiring{Limits: &excluded, InScope: excluded.WriteScope.Allows}})
	left := map[string]string{"kind": "Pod", "reason": config.RefusedNamespace}
	testkit.WaitFor(t, "the tier labels outside the write scope counted as left", testkit.Timeout, func() bool {
		return testkit.Metric(t, "metawatch_keys_left_by_guardrail", left) == 3
	})
	if n := second.writes.Load(); n != 0 {
		t.Errorf("metawatch wrote %d times outside the write scope", n)
	}
}
