package access_test

import (
	"fmt"
	"slices"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/metawatch/metawatch/pkg/access"
	"github.com/metawatch/metawatch/pkg/testing/controlplane"
)

// CanI answers as the API server's authorizer does for the identity: yes
// where a Role grants the verb, no in another namespace, cluster-wide, or
// for a verb the Role does not grant.
func TestCanIAnswersAsTheAuthorizer(t *testing.T) {
	controlplane.SkipIfShort(t)
	grant(t, "access-can-a", "access-reader", listPods)
	pods := schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	cases := map[string]struct {
		cfg      *rest.Config
		verb, ns string
		want     bool
	}{
		"the admin may list pods cluster-wide":             {cfg: cp.Config, verb: "list", want: true},
		"a reader may list pods where its Role grants it":  {cfg: as("access-reader"), verb: "list", ns: "access-can-a", want: true},
		"a reader may watch pods where its Role grants it": {cfg: as("access-reader"), verb: "watch", ns: "access-can-a", want: true},
		"a reader may not list pods in another namespace":  {cfg: as("access-reader"), verb: "list", ns: "access-can-b", want: false},
		"a reader may not list pods cluster-wide":          {cfg: as("access-reader"), verb: "list", want: false},
		"a reader may not patch pods it may only list":     {cfg: as("access-reader"), verb: "patch", ns: "access-can-a", want: false},
		"an identity granted nothing may not list":         {cfg: as("access-nobody"), verb: "list", ns: "access-can-a", want: false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := access.CanI(t.Context(), clientset(t, tc.cfg), tc.verb, pods, tc.ns)
			if err != nil || got != tc.want {
				t.Errorf("CanI(%s pods in %q) = %v, %v; want %v", tc.verb, tc.ns, got, err, tc.want)
			}
		})
	}
}

// Grants lists, verb by verb, what the identity's Roles grant in the
// namespace asked about, resourceNames included, and nothing of another
// namespace's Roles.
func TestGrantsListWhatTheRolesGrantInTheNamespace(t *testing.T) {
	controlplane.SkipIfShort(t)
	const user = "access-granted"
	grant(t, "access-grants", user, listPods,
		rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get"}, ResourceNames: []string{"metawatch-selectors"}})
	granted := []access.Grant{
		{Resource: "pods", Verb: "list"},
		{Resource: "pods", Verb: "watch"},
		{Resource: "configmaps", Verb: "get", Names: []string{"metawatch-selectors"}},
	}
	cases := map[string]struct {
		ns   string
		want bool // whether granted is among the grants
	}{
		"the namespace of the Role has each of its grants": {ns: "access-grants", want: true},
		"another namespace has none of the Role's grants":  {ns: "default", want: false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := access.Grants(t.Context(), clientset(t, as(user)), tc.ns)
			if err != nil {
				t.Fatal(err)
			}
			for _, g := range granted {
				if has := slices.ContainsFunc(got, func(h access.Grant) bool { return fmt.Sprint(h) == fmt.Sprint(g) }); has != tc.want {
					t.Errorf("in namespace %q, grant %+v among the grants: %v, want %v (grants: %+v)", tc.ns, g, has, tc.want, got)
				}
			}
		})
	}
}

func clientset(t *testing.T, cfg *rest.Config) kubernetes.Interface {
	t.Helper()
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}
