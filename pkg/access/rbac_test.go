package access_test

import (
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/metawatch/metawatch/pkg/testing/testkit"
)

// as is cp's config acting as user, who has only what the test grants.
func as(user string) *rest.Config {
	cfg := rest.CopyConfig(cp.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	return cfg
}

// grant gives user rules in namespace ns (a Role and its RoleBinding), or
// cluster-wide for ns "" (a ClusterRole and its ClusterRoleBinding), and
// takes them back when the test ends.
func grant(t *testing.T, ns, user string, rules ...rbacv1.PolicyRule) {
	t.Helper()
	c := testkit.Client(t, cp.Config)
	name := "access-test-" + user
	subject := []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}}
	var role, binding client.Object
	if ns == "" {
		role = &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules}
		binding = &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name}, Subjects: subject,
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name}}
	} else {
		testkit.Namespace(t, c, ns, nil)
		role = &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Rules: rules}
		binding = &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Subjects: subject,
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name}}
	}
	for _, obj := range []client.Object{role, binding} {
		if err := c.Create(t.Context(), obj); err != nil {
			t.Fatal(err)
		}
		testkit.DeleteAtCleanup(t, c, obj)
	}
	waitGranted(t, c, ns, user, rules[0])
}

// waitGranted waits until the authorizer lets user do rule's first verb in
// ns: RBAC takes a moment to see a new binding.
func waitGranted(t *testing.T, c client.Client, ns, user string, rule rbacv1.PolicyRule) {
	t.Helper()
	attrs := &authorizationv1.ResourceAttributes{Namespace: ns, Verb: rule.Verbs[0], Group: rule.APIGroups[0], Resource: rule.Resources[0]}
	if len(rule.ResourceNames) > 0 {
		attrs.Name = rule.ResourceNames[0]
	}
	testkit.WaitFor(t, user+" to be granted "+rule.String(), testkit.Timeout, func() bool {
		review := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: user, ResourceAttributes: attrs}}
		return c.Create(t.Context(), review) == nil && review.Status.Allowed
	})
}

// listPods is the rule to list and watch pods.
var listPods = rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"list", "watch"}}
