package reload_test

import (
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/metawatch/metawatch/pkg/testing/controlplane"
	"github.com/metawatch/metawatch/pkg/testing/testkit"
)

// An identity that may not list Secrets: the Secrets watch is reported as
// forbidden by name (log, Event, metric, /readyz), and the other kinds work.
func TestForbiddenKindIsReportedAndTheOthersServed(t *testing.T) {
	controlplane.SkipIfShort(t)
	c := testkit.Client(t, cp.Config)
	testkit.Namespace(t, c, "fb", nil)
	grantRestricted(t)
	kubectlApply(t, selectors("fb", "watches:\n- kind: Pod\n  namespaces: [fb]\n- kind: Secret\n  namespaces: [fb]\nrules:\n- {name: fb-tier, kinds: [Pod], setLabels: {tier: gold}}\n"))
	restricted := rest.CopyConfig(cp.Config)
	restricted.Impersonate = rest.ImpersonationConfig{UserName: "metawatch-restricted"}
	inst := startInstance(t, restricted, "fb/selectors")

	testkit.Pod(t, c, "fb", "p-0", nil)
	testkit.WaitFor(t, "the Pod rule to work", testkit.Timeout, func() bool { return podLabel(t, c, "fb", "p-0", "tier") == "gold" })
	want := "watches[1] (Secret): forbidden to list secrets in namespace fb: grant the identity list and watch on secrets"
	testkit.WaitFor(t, "/readyz/configuration to name the forbidden kind", testkit.Timeout, func() bool { return strings.Contains(inst.readiness(), want) })
	testkit.WaitFor(t, "a WatchForbidden Event", testkit.Timeout, func() bool { return eventWith(t, c, "fb", "WatchForbidden", want) })
	if got := testkit.Metric(t, "metawatch_watch_ready", map[string]string{"kind": "Secret"}); got != 0 {
		t.Errorf("metawatch_watch_ready{kind=Secret} = %v, want 0", got)
	}
	if got := testkit.Metric(t, "metawatch_watch_ready", map[string]string{"kind": "Pod"}); got != 1 {
		t.Errorf("metawatch_watch_ready{kind=Pod} = %v, want 1", got)
	}
}

// grantRestricted gives user metawatch-restricted what metawatch needs for
// Pods and its ConfigMap, and nothing on Secrets.
func grantRestricted(t *testing.T) {
	t.Helper()
	c := testkit.Client(t, cp.Config)
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "metawatch-restricted"},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"list", "watch", "patch"}},
			{APIGroups: []string{""}, Resources: []string{"configmaps"}, ResourceNames: []string{"selectors"}, Verbs: []string{"get", "list", "watch"}},
			{APIGroups: []string{"events.k8s.io"}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}},
		},
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "metawatch-restricted"},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "metawatch-restricted"},
		Subjects:   []rbacv1.Subject{{Kind: "User", Name: "metawatch-restricted"}},
	}
	if err := c.Create(t.Context(), role); err != nil {
		t.Fatal(err)
	}
	if err := c.Create(t.Context(), binding); err != nil {
		t.Fatal(err)
	}
}

// kube-apiserver stopped and started again during a run: metawatch's watches
// resume and a change made after the restart is acted on.
func TestAPIServerRestart(t *testing.T) {
	controlplane.SkipIfShort(t)
	cp.SkipIfExisting(t)
	c := testkit.Client(t, cp.Config)
	testkit.Namespace(t, c, "restart", nil)
	kubectlApply(t, selectors("restart", "watches:\n- kind: Pod\n  namespaces: [restart]\nrules:\n- {name: restart-tier, kinds: [Pod], setLabels: {tier: gold}}\n"))
	startInstance(t, cp.Config, "restart/selectors")
	testkit.Pod(t, c, "restart", "before", nil)
	testkit.WaitFor(t, "the rule before the restart", testkit.Timeout, func() bool { return podLabel(t, c, "restart", "before", "tier") == "gold" })

	if err := cp.StopAPIServer(); err != nil {
		t.Fatal(err)
	}
	if err := cp.StartAPIServer(); err != nil {
		t.Fatal(err)
	}
	testkit.Pod(t, c, "restart", "after", nil)
	testkit.WaitFor(t, "the rule after the restart", testkit.Timeout, func() bool { return podLabel(t, c, "restart", "after", "tier") == "gold" })
	kubectlApply(t, selectors("restart", "watches:\n- kind: Pod\n  namespaces: [restart]\nrules:\n- {name: restart-tier, kinds: [Pod], setLabels: {tier: gold}}\n- {name: restart-zone, kinds: [Pod], setLabels: {zone: west}}\n"))
	testkit.WaitFor(t, "a reload after the restart", testkit.Timeout, func() bool { return podLabel(t, c, "restart", "before", "zone") == "west" })
}
