package reload_test

import (
	"fmt"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/metawatch/metawatch/pkg/config"
	"github.com/metawatch/metawatch/pkg/reload"
	"github.com/metawatch/metawatch/pkg/testing/controlplane"
	"github.com/metawatch/metawatch/pkg/testing/testkit"
)

// metawatch_rule_violations is exact after any number of reloads (not N times
// the violators after N generations), a removed rule's series goes, and each
// violating object is counted once in the namespace's aggregate
// MissingRequiredMetadata Event, not once per reload.
func TestViolationsStayExactAcrossReloads(t *testing.T) {
	controlplane.SkipIfShort(t)
	c := testkit.Client(t, cp.Config)
	testkit.Namespace(t, c, "audit", nil)
	for i := range 3 {
		testkit.Pod(t, c, "audit", fmt.Sprintf("p-%d", i), nil)
	}
	require := "watches:\n- kind: Pod\n  namespaces: [audit]\nrules:\n- {name: audit-owner, kinds: [Pod], requireLabels: [owner]}\n"
	kubectlApply(t, selectors("audit", require))
	folded := func() float64 {
		return testkit.Metric(t, "metawatch_events_folded_total", map[string]string{"reason": "MissingRequiredMetadata"})
	}
	foldedBefore := folded()
	startInstance(t, cp.Config, "audit/selectors")
	violations := func() float64 {
		return testkit.Metric(t, "metawatch_rule_violations", map[string]string{"rule": "audit-owner"})
	}
	testkit.WaitFor(t, "3 violations", testkit.Timeout, func() bool { return violations() == 3 })

	for i := range 2 {
		generation := testkit.Metric(t, "metawatch_config_generation", nil)
		kubectlApply(t, selectors("audit", require+fmt.Sprintf("- {name: audit-extra-%d, kinds: [Pod], setLabels: {extra: x%d}}\n", i, i)))
		testkit.WaitFor(t, "the reload", testkit.Timeout, func() bool { return testkit.Metric(t, "metawatch_config_generation", nil) > generation })
		testkit.WaitFor(t, "the extra label", testkit.Timeout, func() bool { return podLabel(t, c, "audit", "p-2", "extra") == fmt.Sprintf("x%d", i) })
	}
	// The new generation re-audits each pod after its reload (p-2 first,
	// maybe): the gauge is 3 once it has, not 6 or 9.
	testkit.WaitFor(t, "metawatch_rule_violations{rule=audit-owner} to be 3 after two reloads", testkit.Timeout, func() bool { return violations() == 3 })
	if n := folded() - foldedBefore; n != 3 {
		t.Errorf("%v MissingRequiredMetadata occurrences over two reloads, want 3 (one per pod)", n)
	}
	testkit.WaitFor(t, "the namespace's Event to count the 3 pods", testkit.Timeout, func() bool {
		return testkit.Occurrences(testkit.AggregateEvents(t, c, "audit", "MissingRequiredMetadata", "audit-owner")) == 3
	})
	generation := testkit.Metric(t, "metawatch_config_generation", nil)
	kubectlApply(t, selectors("audit", "watches:\n- kind: Pod\n  namespaces: [audit]\n"))
	testkit.WaitFor(t, "the reload", testkit.Timeout, func() bool { return testkit.Metric(t, "metawatch_config_generation", nil) > generation })
	if got := violations(); got != 0 {
		t.Errorf("metawatch_rule_violations{rule=audit-owner} = %v after the rule was removed, want no series", got)
	}
}

// A reload that fails for a reason that is not the configuration's (the API
// server unavailable while the new generation is checked) is not reported as
// an invalid configuration: it is retried with backoff, under its own reason,
// until the valid edit runs.
func TestTransientReloadFailuresAreRetriedNotRejected(t *testing.T) {
	controlplane.SkipIfShort(t)
	c := testkit.Client(t, cp.Config)
	testkit.Namespace(t, c, "transient", nil)
	testkit.Pod(t, c, "transient", "p-0", nil)
	config := "watches:\n- kind: Pod\n  namespaces: [transient]\nrules:\n- {name: transient-tier, kinds: [Pod], setLabels: {tier: gold}}\n"
	kubectlApply(t, selectors("transient", config))
	faults := &testkit.Faults{Suffix: "/namespaces/transient/pods"}
	startInstance(t, faults.Wrap(cp.Config), "transient/selectors")
	testkit.WaitFor(t, "the first rule", testkit.Timeout, func() bool { return podLabel(t, c, "transient", "p-0", "tier") == "gold" })

	faults.Set(true)
	kubectlApply(t, selectors("transient", config+"- {name: transient-zone, kinds: [Pod], setLabels: {zone: west}}\n"))
	testkit.WaitFor(t, "the reload to fail twice", testkit.Timeout, func() bool { return faults.Hits() >= 2 })
	faults.Set(false)
	testkit.WaitFor(t, "the valid edit to run once the API server answers", testkit.Timeout, func() bool { return podLabel(t, c, "transient", "p-0", "zone") == "west" })
	if eventWith(t, c, "transient", "InvalidConfig", "") {
		t.Error("a transient failure was reported as an InvalidConfig Event")
	}
	if !eventWith(t, c, "transient", "ReloadRetrying", "the server is currently unable to handle the request") {
		t.Error("no ReloadRetrying Event naming the transient failure")
	}
	if n := testkit.Metric(t, "metawatch_config_reload_retries_total", nil); n < 1 {
		t.Errorf("metawatch_config_reload_retries_total = %v, want at least 1", n)
	}
}

// Losing the permission to list Namespaces freezes what metawatch owns on the
// kinds that copy from them: a new generation built meanwhile (a reload)
// releases nothing and writes nothing there, says so, and everything resumes
// once the permission is back.
func TestForbiddenNamespacesFreezeCopiedKeys(t *testing.T) {
	controlplane.SkipIfShort(t)
	c := testkit.Client(t, cp.Config)
	testkit.Namespace(t, c, "frozen", map[string]string{"team": "a"})
	for i := range 5 {
		testkit.Pod(t, c, "frozen", fmt.Sprintf("p-%d", i), nil)
	}
	role := grantNamespaceCopier(t, "metawatch-copier")
	config := "watches:\n- kind: Pod\n  namespaces: [frozen]\nrules:\n- name: frozen-team\n  kinds: [Pod]\n  copyFromNamespace: {labels: [team]}\n  setLabels: {tier: gold}\n"
	kubectlApply(t, selectors("frozen", config))
	restricted := rest.CopyConfig(cp.Config)
	restricted.Impersonate = rest.ImpersonationConfig{UserName: "metawatch-copier"}
	inst := startInstance(t, restricted, "frozen/selectors")
	allPods := func(want func(map[string]string) bool) func() bool {
		return func() bool {
			for i := range 5 {
				if !want(podLabels(t, c, "frozen", fmt.Sprintf("p-%d", i))) {
					return false
				}
			}
			return true
		}
	}
	testkit.WaitFor(t, "every pod to get team and tier", testkit.Timeout, allPods(func(l map[string]string) bool { return l["team"] == "a" && l["tier"] == "gold" }))

	setNamespaceAccess(t, role, false)
	generation := testkit.Metric(t, "metawatch_config_generation", nil)
	creates := podCreatesSeen(t)
	kubectlApply(t, selectors("frozen", config+"- {name: frozen-zone, kinds: [Pod], setLabels: {zone: west}}\n"))
	testkit.WaitFor(t, "the reload", testkit.Timeout, func() bool { return testkit.Metric(t, "metawatch_config_generation", nil) > generation })
	testkit.WaitFor(t, "the new generation to see every pod", testkit.Timeout, func() bool { return podCreatesSeen(t) >= creates+5 })
	time.Sleep(2 * time.Second) // what a generation that did not freeze would write, it writes now
	testkit.WaitFor(t, "/readyz/configuration to say Pod writes are frozen", testkit.Timeout, func() bool {
		return contains(inst.readiness(), "forbidden to list namespaces")
	})
	if got := testkit.Metric(t, "metawatch_writes_frozen", map[string]string{"kind": "Pod"}); got != 1 {
		t.Errorf("metawatch_writes_frozen{kind=Pod} = %v while Namespaces are forbidden, want 1", got)
	}
	for i := range 5 {
		l := podLabels(t, c, "frozen", fmt.Sprintf("p-%d", i))
		if l["team"] != "a" || l["tier"] != "gold" {
			t.Errorf("p-%d lost keys while Namespaces were forbidden: %v", i, l)
		}
	}

	setNamespaceAccess(t, role, true)
	testkit.MergePatch(t, c, namespaceObject("frozen"), "kubectl-label", `{"metadata":{"labels":{"team":"b"}}}`)
	testkit.WaitFor(t, "every pod to follow the namespace once the permission is back", testkit.Timeout, allPods(func(l map[string]string) bool {
		return l["team"] == "b" && l["tier"] == "gold" && l["zone"] == "west"
	}))
}

// grantNamespaceCopier gives user what a copying metawatch needs (pods,
// namespaces, its ConfigMap, Events) and returns the role.
func grantNamespaceCopier(t *testing.T, user string) *rbacv1.ClusterRole {
	t.Helper()
	role := &rbacv1.ClusterRole{ObjectMeta: objectMeta(user), Rules: copierRules(true)}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: objectMeta(user),
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: "User", Name: user}},
	}
	c := testkit.Client(t, cp.Config)
	for _, obj := range []client.Object{role, binding} {
		if err := c.Create(t.Context(), obj); err != nil {
			t.Fatal(err)
		}
	}
	return role
}

func copierRules(namespaces bool) []rbacv1.PolicyRule {
	rules := []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"list", "watch", "patch"}},
		{APIGroups: []string{""}, Resources: []string{"configmaps"}, ResourceNames: []string{"selectors"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{"events.k8s.io"}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}},
	}
	if namespaces {
		rules = append(rules, rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"namespaces"}, Verbs: []string{"list", "watch"}})
	}
	return rules
}

// setNamespaceAccess grants or revokes list and watch on Namespaces.
func setNamespaceAccess(t *testing.T, role *rbacv1.ClusterRole, allowed bool) {
	t.Helper()
	setRules(t, role, copierRules(allowed))
}

// setRules replaces role's rules.
func setRules(t *testing.T, role *rbacv1.ClusterRole, rules []rbacv1.PolicyRule) {
	t.Helper()
	c := testkit.Client(t, cp.Config)
	if err := c.Get(t.Context(), client.ObjectKeyFromObject(role), role); err != nil {
		t.Fatal(err)
	}
	role.Rules = rules
	if err := c.Update(t.Context(), role); err != nil {
		t.Fatal(err)
	}
}

// The write scope: the operator's (flags) bounds where rules write, and the
// configuration's own writeScope can only narrow it. Objects outside are left
// as they are, keys metawatch owns there included.
func TestRulesWriteOnlyInsideTheWriteScope(t *testing.T) {
	controlplane.SkipIfShort(t)
	c := testkit.Client(t, cp.Config)
	for _, ns := range []string{"scope-a", "scope-b", "scope-c"} {
		testkit.Namespace(t, c, ns, nil)
		testkit.Pod(t, c, ns, "p", nil)
	}
	kubectlApply(t, selectors("scope-a", "watches:\n- kind: Pod\n  namespaces: [scope-a, scope-b, scope-c]\nwriteScope: {excludeNamespaces: [scope-b]}\n"+
		"rules:\n- {name: scope-tier, kinds: [Pod], setLabels: {tier: gold}}\n"))
	startInstance(t, cp.Config, "scope-a/selectors", func(r *reload.Reloader) {
		limits := config.DefaultGuardrails()
		limits.WriteScope.Namespaces = []string{"scope-a", "scope-b"} // as --write-namespaces=scope-a,scope-b
		r.Settings.Guardrails = limits
	})
	testkit.WaitFor(t, "the pod in scope to be labelled", testkit.Timeout, func() bool { return podLabel(t, c, "scope-a", "p", "tier") == "gold" })
	testkit.WaitFor(t, "every pod to be reconciled", testkit.Timeout, func() bool {
		return testkit.Metric(t, "metawatch_cached_objects", map[string]string{"kind": "Pod"}) == 3
	})
	for _, ns := range []string{"scope-b", "scope-c"} {
		if got := podLabel(t, c, ns, "p", "tier"); got != "" {
			t.Errorf("the pod in %s, outside the write scope, got tier=%q", ns, got)
		}
	}
}

// Namespaces becoming unreadable under a running generation (RBAC changed,
// then the watch reconnects and gets 403) freezes the kinds that copy from
// them: a pod whose copied label is removed by hand is not written from the
// stale Namespace cache, and once the permission is back the configuration
// runs anew and the pod follows the Namespace as it is now.
func TestNamespacesBecomingUnreadableFreezeWrites(t *testing.T) {
	controlplane.SkipIfShort(t)
	c := testkit.Client(t, cp.Config)
	testkit.Namespace(t, c, "lost", map[string]string{"team": "a"})
	testkit.Pod(t, c, "lost", "p", nil)
	role := grantNamespaceCopier(t, "metawatch-loser")
	kubectlApply(t, selectors("lost", "watches:\n- kind: Pod\n  namespaces: [lost]\nrules:\n- name: lost-team\n  kinds: [Pod]\n  copyFromNamespace: {labels: [team]}\n"))
	fwd := testkit.Forward(t, testkit.FreeAddress(t), testkit.APIServerHost(t, cp.Config))
	restricted := rest.CopyConfig(cp.Config)
	restricted.Host = "https://" + fwd.Addr
	restricted.Impersonate = rest.ImpersonationConfig{UserName: "metawatch-loser"}
	inst := startInstance(t, restricted, "lost/selectors")
	testkit.WaitFor(t, "the pod to get team=a", testkit.Timeout, func() bool { return podLabel(t, c, "lost", "p", "team") == "a" })

	setNamespaceAccess(t, role, false)
	fwd.Restart(t) // the watches reconnect: the Namespace watch is now forbidden
	testkit.WaitFor(t, "metawatch_writes_frozen{kind=Pod} to be 1", testkit.Timeout, func() bool {
		return testkit.Metric(t, "metawatch_writes_frozen", map[string]string{"kind": "Pod"}) == 1
	})
	testkit.WaitFor(t, "/readyz/configuration to say why", testkit.Timeout, func() bool { return contains(inst.readiness(), "writes frozen") })
	testkit.MergePatch(t, c, namespaceObject("lost"), "kubectl-label", `{"metadata":{"labels":{"team":"b"}}}`)
	reconciles := testkit.Metric(t, "controller_runtime_reconcile_total", map[string]string{"controller": "pod"})
	testkit.MergePatch(t, c, podObject("lost", "p"), "kubectl-label", `{"metadata":{"labels":{"team":null}}}`)
	testkit.WaitFor(t, "metawatch to reconcile the pod", testkit.Timeout, func() bool {
		return testkit.Metric(t, "controller_runtime_reconcile_total", map[string]string{"controller": "pod"}) > reconciles
	})
	if got := podLabel(t, c, "lost", "p", "team"); got != "" {
		t.Errorf("the pod got team=%q from a Namespace cache that no longer follows the cluster", got)
	}

	setNamespaceAccess(t, role, true)
	testkit.WaitFor(t, "the pod to follow the Namespace once the permission is back", testkit.Timeout, func() bool { return podLabel(t, c, "lost", "p", "team") == "b" })
}

// podCreatesSeen is how many pod events passed metawatch's predicates (every
// create does, whether or not it is then queued).
func podCreatesSeen(t *testing.T) float64 {
	return testkit.Metric(t, "metawatch_events_total", map[string]string{"kind": "Pod", "verdict": "passed"})
}
