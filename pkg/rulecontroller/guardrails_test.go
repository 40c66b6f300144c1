package rulecontroller_test

import (
	"fmt"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/metawatch/metawatch/pkg/config"
	"github.com/metawatch/metawatch/pkg/rulecontroller"
	"github.com/metawatch/metawatch/pkg/settings"
	"github.com/metawatch/metawatch/pkg/testing/controlplane"
	"github.com/metawatch/metawatch/pkg/testing/testkit"
)

// After the operator narrows --writable-kinds to Pod, an audit-only rule on
// Deployments keeps a reconciler on them: the keys an earlier run set there
// stay, labels and annotations alike, and no write reaches a Deployment
// (before, each was released: one write per Deployment).
func TestAKindNoLongerWritableKeepsItsKeys(t *testing.T) {
	controlplane.SkipIfShort(t)
	for name, kt := range testkit.KeyTypes {
		t.Run(name, func(t *testing.T) {
			c := testkit.Client(t, cp.Config)
			ns := "narrowed-kinds-" + name
			if err := c.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
				t.Fatal(err)
			}
			for i := range 3 {
				if err := c.Create(t.Context(), deployment(ns, fmt.Sprintf("web-%d", i), nil, nil)); err != nil {
					t.Fatal(err)
				}
			}
			wide := limitsWriting("Pod", "Deployment")
			first := startInstance(t, fmt.Sprintf("watches:\n- kind: Deployment\n  namespaces: [%s]\nrules:\n- {name: team, kinds: [Deployment], %s: {team: shop}}\n", ns, kt.Set),
				tuned(func(s *settings.Settings) { s.Guardrails = wide }))
			waitDeployments(t, c, kt, ns, "the team "+kt.Name+" on every Deployment", func(m map[string]string) bool { return m["team"] == "shop" })
			first.stop()

			narrow := limitsWriting("Pod")
			violations := metricSince(t, "metawatch_rule_violations", map[string]string{"rule": "owner", "kind": "Deployment.apps"})
			left := metricSince(t, "metawatch_keys_left_by_guardrail", map[string]string{"kind": "Deployment.apps", "reason": config.RefusedKind})
			second := startInstance(t, fmt.Sprintf("watches:\n- kind: Deployment\n  namespaces: [%s]\nrules:\n- {name: owner, kinds: [Deployment], requireLabels: [owner]}\n", ns),
				tuned(func(s *settings.Settings) { s.Guardrails = narrow }))
			testkit.WaitFor(t, "every Deployment audited", testkit.Timeout, func() bool { return violations() == 3 })
			testkit.WaitFor(t, "the team "+kt.Name+"s counted as left", testkit.Timeout, func() bool { return left() == 3 })
			waitDeployments(t, c, kt, ns, "the team "+kt.Name+" still on every Deployment", func(m map[string]string) bool { return m["team"] == "shop" })
			if n := second.writes.Load(); n != 0 {
				t.Errorf("metawatch wrote %d times to Deployments it may no longer write", n)
			}
		})
	}
}

// A key metawatch owns that no rule wants any more, and that the operator
// has since protected, is kept at its value, even by an apply that writes
// other keys (leaving it out of the apply would delete it). Annotations
// were not in the cache's view before (it kept only those the configuration
// reads): the apply left a protected annotation out, and deleted it.
func TestAProtectedKeyIsNotReleased(t *testing.T) {
	controlplane.SkipIfShort(t)
	for name, kt := range testkit.KeyTypes {
		t.Run(name, func(t *testing.T) {
			ns := "protected-release-" + name
			c := testkit.Populated(t, cp, ns, nil, 3)
			open := limitsWriting("Pod")
			open.ProtectedKeys = nil
			first := startInstance(t, fmt.Sprintf("watches:\n- kind: Pod\n  namespaces: [%s]\nrules:\n- {name: both, kinds: [Pod], %s: {team: a, tier: gold}}\n", ns, kt.Set),
				tuned(func(s *settings.Settings) { s.Guardrails = open }))
			waitAllPodKeys(t, c, kt, "both "+kt.Name+"s", []string{ns}, func(_ string, m map[string]string) bool { return m["team"] == "a" && m["tier"] == "gold" })
			first.stop()

			protected := limitsWriting("Pod")
			protected.ProtectedKeys = []string{"team"}
			left := metricSince(t, "metawatch_keys_left_by_guardrail", map[string]string{"kind": "Pod", "reason": config.RefusedProtected})
			startInstance(t, fmt.Sprintf("watches:\n- kind: Pod\n  namespaces: [%s]\nrules:\n- {name: tier, kinds: [Pod], %s: {tier: gold, zone: west}}\n", ns, kt.Set),
				tuned(func(s *settings.Settings) { s.Guardrails = protected }))
			waitAllPodKeys(t, c, kt, "the new zone "+kt.Name, []string{ns}, func(_ string, m map[string]string) bool { return m["zone"] == "west" })
			waitAllPodKeys(t, c, kt, "the protected team "+kt.Name+" kept", []string{ns}, func(_ string, m map[string]string) bool { return m["team"] == "a" && m["tier"] == "gold" })
			testkit.WaitFor(t, "the team "+kt.Name+"s counted as left", testkit.Timeout, func() bool { return left() == 3 })
			// Told as one Event for the namespace, counting the three pods.
			testkit.WaitFor(t, "a KeysLeftByGuardrail Event counting the 3 pods", testkit.Timeout, func() bool {
				return testkit.Occurrences(testkit.AggregateEvents(t, c, ns, rulecontroller.ReasonKeysLeft, "")) == 3
			})
			events := testkit.AggregateEvents(t, c, ns, rulecontroller.ReasonKeysLeft, "")
			if len(events) != 1 || !strings.Contains(events[0].Note, "protected-key") || !strings.Contains(events[0].Note, "release "+kt.Name+" team") {
				t.Errorf("want one Event naming the guardrail and the released %s team, got %+v", kt.Name, events)
			}
		})
	}
}

// limitsWriting are the default limits with kinds writable.
func limitsWriting(kinds ...string) config.Guardrails {
	l := config.DefaultGuardrails()
	l.WritableKinds = kinds
	return l
}

// waitDeployments waits until every Deployment of ns satisfies ok on its map of kt.
func waitDeployments(t *testing.T, c client.Client, kt testkit.KeyType, ns, what string, ok func(map[string]string) bool) {
	t.Helper()
	testkit.WaitFor(t, what, testkit.Timeout, func() bool {
		var list appsv1.DeploymentList
		if err := c.List(t.Context(), &list, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		for _, d := range list.Items {
			if !ok(kt.Of(&d)) {
				return false
			}
		}
		return len(list.Items) > 0
	})
}

// Keys metawatch owns on objects the operator has since put outside the
// write scope, labels and annotations, are counted as left from the start,
// without waiting for an update of each object, and nothing is written there.
func TestKeysOutsideTheWriteScopeAreCountedAtStart(t *testing.T) {
	controlplane.SkipIfShort(t)
	for name, kt := range testkit.KeyTypes {
		t.Run(name, func(t *testing.T) {
			ns := "scope-left-" + name
			c := testkit.Populated(t, cp, ns, nil, 3)
			conf := fmt.Sprintf("watches:\n- kind: Pod\n  namespaces: [%s]\nrules:\n- {name: tier, kinds: [Pod], %s: {tier: gold}}\n", ns, kt.Set)
			first := startInstance(t, conf, tuning{})
			waitAllPodKeys(t, c, kt, "the tier "+kt.Name, []string{ns}, func(_ string, m map[string]string) bool { return m["tier"] == "gold" })
			first.stop()

			excluded := limitsWriting("Pod")
			excluded.WriteScope.ExcludeNamespaces = []string{ns}
			left := metricSince(t, "metawatch_keys_left_by_guardrail", map[string]string{"kind": "Pod", "reason": config.RefusedNamespace})
			scoped := tuned(func(s *settings.Settings) { s.Guardrails = excluded })
			scoped.InScope = excluded.WriteScope.Allows
			second := startInstance(t, conf, scoped)
			testkit.WaitFor(t, "the tier "+kt.Name+"s outside the write scope counted as left", testkit.Timeout, func() bool { return left() == 3 })
			if n := second.writes.Load(); n != 0 {
				t.Errorf("metawatch wrote %d times outside the write scope", n)
			}
		})
	}
}
