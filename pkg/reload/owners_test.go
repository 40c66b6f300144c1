package reload_test

import (
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/metawatch/metawatch/pkg/testing/controlplane"
	"github.com/metawatch/metawatch/pkg/testing/testkit"
)

// Losing the permission to list a kind of the owner chain (ReplicaSets)
// freezes what metawatch copied from owners: a new generation built meanwhile
// cannot see the chain, and must not take the pods for ownerless and release
// their keys. Everything resumes once the permission is back.
func TestForbiddenOwnersFreezeCopiedKeys(t *testing.T) {
	controlplane.SkipIfShort(t)
	c := testkit.Client(t, cp.Config)
	const ns = "owners-frozen"
	testkit.Namespace(t, c, ns, nil)
	template := corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: testkit.PodImage}}}}
	selector := &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}
	web := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web", Labels: map[string]string{"cost-center": "7"}},
		Spec: appsv1.DeploymentSpec{Selector: selector, Template: template}}
	create(t, c, web)
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web-1", OwnerReferences: controlledBy("apps/v1", "Deployment", web)},
		Spec: appsv1.ReplicaSetSpec{Selector: selector, Template: template}}
	create(t, c, rs)
	for i := range 5 {
		create(t, c, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("p-%d", i), OwnerReferences: controlledBy("apps/v1", "ReplicaSet", rs)},
			Spec: template.Spec})
	}
	role := grantOwnerCopier(t, "metawatch-owner-copier")
	config := "watches:\n- kind: Pod\n  namespaces: [" + ns + "]\nrules:\n- name: cost\n  kinds: [Pod]\n  copyFromOwner: {kinds: [Deployment], labels: [cost-center]}\n"
	kubectlApply(t, selectors(ns, config))
	restricted := rest.CopyConfig(cp.Config)
	restricted.Impersonate = rest.ImpersonationConfig{UserName: "metawatch-owner-copier"}
	inst := startInstance(t, restricted, ns+"/selectors")
	allPods := func(want string) func() bool {
		return func() bool {
			for i := range 5 {
				if podLabels(t, c, ns, fmt.Sprintf("p-%d", i))["cost-center"] != want {
					return false
				}
			}
			return true
		}
	}
	testkit.WaitFor(t, "every pod to get its Deployment's cost-center", testkit.Timeout, allPods("7"))

	setOwnerAccess(t, role, false)
	generation := testkit.Metric(t, "metawatch_config_generation", nil)
	creates := podCreatesSeen(t)
	kubectlApply(t, selectors(ns, config+"- {name: tier, kinds: [Pod], setLabels: {tier: gold}}\n"))
	testkit.WaitFor(t, "the reload", testkit.Timeout, func() bool { return testkit.Metric(t, "metawatch_config_generation", nil) > generation })
	testkit.WaitFor(t, "the new generation to see every pod", testkit.Timeout, func() bool { return podCreatesSeen(t) >= creates+5 })
	testkit.WaitFor(t, "/readyz/configuration to say Pod writes are frozen", testkit.Timeout, func() bool {
		return contains(inst.readiness(), "its rules copy from owners")
	})
	// A negative: a frozen generation queues none of the pods it has seen
	// (they are settled: nothing may be done), so nothing it would write can
	// come later. The window is for a generation that wrongly did not
	// freeze, whose writes follow its queue.
	time.Sleep(2 * time.Second)
	if got := testkit.Metric(t, "metawatch_writes_frozen", map[string]string{"kind": "Pod"}); got != 1 {
		t.Errorf("metawatch_writes_frozen{kind=Pod} = %v while ReplicaSets are forbidden, want 1", got)
	}
	for i := range 5 {
		if l := podLabels(t, c, ns, fmt.Sprintf("p-%d", i)); l["cost-center"] != "7" {
			t.Errorf("p-%d lost its cost-center while ReplicaSets were forbidden: %v", i, l)
		}
	}

	setOwnerAccess(t, role, true)
	testkit.MergePatch(t, c, web, "kubectl-label", `{"metadata":{"labels":{"cost-center":"8"}}}`)
	testkit.WaitFor(t, "every pod to follow the Deployment once the permission is back", testkit.Timeout, allPods("8"))
}

func create(t *testing.T, c client.Client, obj client.Object) {
	t.Helper()
	if err := c.Create(t.Context(), obj); err != nil {
		t.Fatal(err)
	}
}

func controlledBy(apiVersion, kind string, owner client.Object) []metav1.OwnerReference {
	return []metav1.OwnerReference{{APIVersion: apiVersion, Kind: kind, Name: owner.GetName(), UID: owner.GetUID(), Controller: ptr.To(true)}}
}

// grantOwnerCopier gives user what metawatch copying from Deployments needs
// (pods, deployments, replicasets, its ConfigMap, Events) and returns the role.
func grantOwnerCopier(t *testing.T, user string) *rbacv1.ClusterRole {
	t.Helper()
	role := &rbacv1.ClusterRole{ObjectMeta: objectMeta(user), Rules: ownerCopierRules(true)}
	create(t, testkit.Client(t, cp.Config), role)
	create(t, testkit.Client(t, cp.Config), &rbacv1.ClusterRoleBinding{
		ObjectMeta: objectMeta(user),
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: "User", Name: user}},
	})
	return role
}

func ownerCopierRules(replicaSets bool) []rbacv1.PolicyRule {
	rules := append(copierRules(false), rbacv1.PolicyRule{APIGroups: []string{"apps"}, Resources: []string{"deployments"}, Verbs: []string{"list", "watch"}})
	if replicaSets {
		rules = append(rules, rbacv1.PolicyRule{APIGroups: []string{"apps"}, Resources: []string{"replicasets"}, Verbs: []string{"list", "watch"}})
	}
	return rules
}

// setOwnerAccess grants or revokes list and watch on ReplicaSets.
func setOwnerAccess(t *testing.T, role *rbacv1.ClusterRole, allowed bool) {
	t.Helper()
	setRules(t, role, ownerCopierRules(allowed))
}
