package reload_test

import (
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/metawatch/metawatch/pkg/admission"
	"github.com/metawatch/metawatch/pkg/config"
	"github.com/metawatch/metawatch/pkg/reload"
	"github.com/metawatch/metawatch/pkg/testing/controlplane"
	"github.com/metawatch/metawatch/pkg/testing/testkit"
)

// A restart with flags that no longer allow a live pair deletes it, though
// the configuration that made it is then rejected and no generation runs;
// where RBAC forbids the delete, or --dry-run, the pair stays and metawatch
// says so (readiness, Event, metric) with the kubectl line that deletes it.
func TestPairsTheFlagsNoLongerAllowGoAtStartUp(t *testing.T) {
	controlplane.SkipIfShort(t)
	controlplane.RequireMutatingAdmissionPolicy(t)
	c := testkit.Client(t, cp.Config)
	for name, tc := range map[string]struct {
		ns      string // and the rule's name
		restart func(r *reload.Reloader)
		as      *rest.Config // nil: an identity that may do everything
		deleted bool
		check   func(t *testing.T, inst *instance, ns string)
	}{
		"--allow-at-creation=false deletes every pair": {ns: "lo-off", deleted: true},
		"--protected-keys with a key the pair writes deletes it": {ns: "lo-key", deleted: true, restart: func(r *reload.Reloader) {
			allowAtCreation(r)
			r.Settings.Guardrails.ProtectedKeys = append(r.Settings.Guardrails.ProtectedKeys, "tier")
		}},
		"--exclude-write-namespaces with a namespace it writes in deletes it": {ns: "lo-scope", deleted: true, restart: func(r *reload.Reloader) {
			allowAtCreation(r)
			r.Settings.Guardrails.WriteScope.ExcludeNamespaces = []string{"lo-scope"}
		}},
		"--dry-run keeps it and says so": {ns: "lo-dry", restart: func(r *reload.Reloader) { r.Settings.DryRun = true },
			check: func(t *testing.T, _ *instance, ns string) {
				testkit.WaitFor(t, "metawatch_admission_cleanup_blocked{reason=dry-run} to be 1", testkit.Timeout, func() bool {
					return testkit.Metric(t, "metawatch_admission_cleanup_blocked", map[string]string{"reason": "dry-run"}) == 1
				})
				testkit.WaitFor(t, "the AdmissionCleanupBlocked Event", testkit.Timeout, func() bool {
					return eventWith(t, c, ns, reload.ReasonAdmissionCleanupBlocked, admission.DeleteCommand(ns+"/selectors"))
				})
			}},
		"RBAC forbidding the delete keeps it and says so": {ns: "lo-rbac", as: restrictedTo(t, "metawatch-no-admission"),
			check: func(t *testing.T, inst *instance, ns string) {
				line := admission.DeleteCommand(ns + "/selectors")
				testkit.WaitFor(t, "/readyz/configuration to give the kubectl line", testkit.Timeout, func() bool { return contains(inst.readiness(), line) })
				testkit.WaitFor(t, "the AdmissionCleanupBlocked Event", testkit.Timeout, func() bool {
					return eventWith(t, c, ns, reload.ReasonAdmissionCleanupBlocked, line)
				})
				if got := testkit.Metric(t, "metawatch_admission_cleanup_blocked", map[string]string{"reason": "forbidden"}); got != 1 {
					t.Errorf("metawatch_admission_cleanup_blocked{reason=forbidden} = %v, want 1", got)
				}
			}},
	} {
		t.Run(name, func(t *testing.T) {
			ns := tc.ns
			rule := leaveAPair(t, c, ns)
			other := anotherInstallationsPair(t, c, rule)
			cfg := cp.Config
			if tc.as != nil {
				cfg = tc.as
			}
			tune := []func(*reload.Reloader){func(r *reload.Reloader) { d := config.DefaultGuardrails(); r.Settings.Guardrails = d }}
			if tc.restart != nil {
				tune = append(tune, tc.restart)
			}
			inst := startInstance(t, cfg, ns+"/selectors", tune...)
			if tc.check != nil {
				tc.check(t, inst, ns)
			}
			if tc.deleted {
				testkit.WaitFor(t, "the pair to be deleted", testkit.Timeout, func() bool {
					return absent(t, c, &admissionregistrationv1.MutatingAdmissionPolicy{}, rule) && absent(t, c, &admissionregistrationv1.MutatingAdmissionPolicyBinding{}, rule)
				})
			} else if absent(t, c, &admissionregistrationv1.MutatingAdmissionPolicy{}, rule) {
				t.Error("the pair was deleted")
			}
			if absent(t, c, &admissionregistrationv1.MutatingAdmissionPolicy{}, other) {
				t.Error("another installation's pair was deleted")
			}
		})
	}
}

// leaveAPair runs a rule with atCreation in ns until its pair is in place,
// then stops, as a process does before a restart; it returns the rule's name.
func leaveAPair(t *testing.T, c client.Client, ns string) string {
	t.Helper()
	rule := ns
	testkit.Namespace(t, c, ns, nil)
	kubectlApply(t, selectors(ns, "watches:\n- kind: Pod\nwriteScope: {namespaces: ["+ns+"]}\nrules:\n- name: "+rule+"\n  kinds: [Pod]\n  atCreation: true\n  setLabels: {tier: gold}\n"))
	inst := startInstance(t, cp.Config, ns+"/selectors", allowAtCreation)
	testkit.WaitFor(t, "the pair to be made", testkit.Timeout, func() bool {
		return !absent(t, c, &admissionregistrationv1.MutatingAdmissionPolicyBinding{}, rule)
	})
	inst.stop()
	return rule
}

// anotherInstallationsPair copies rule's policy as another installation's.
func anotherInstallationsPair(t *testing.T, c client.Client, rule string) string {
	t.Helper()
	var p admissionregistrationv1.MutatingAdmissionPolicy
	if err := c.Get(t.Context(), client.ObjectKey{Name: admission.Name(rule)}, &p); err != nil {
		t.Fatal(err)
	}
	other := rule + "-other"
	copied := &admissionregistrationv1.MutatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: admission.Name(other), Labels: map[string]string{
		admission.ManagedByLabel: admission.ManagedBy, admission.InstallationLabel: admission.InstallationValue("elsewhere/selectors")}}, Spec: p.Spec}
	create(t, c, copied)
	testkit.DeleteAtCleanup(t, c, copied)
	return other
}

func absent(t *testing.T, c client.Client, obj client.Object, rule string) bool {
	return client.IgnoreNotFound(c.Get(t.Context(), client.ObjectKey{Name: admission.Name(rule)}, obj)) == nil && obj.GetName() == ""
}

// restrictedTo is an identity with what metawatch needs for Pods and its
// ConfigMap, and nothing on admission policies.
func restrictedTo(t *testing.T, user string) *rest.Config {
	t.Helper()
	c := testkit.Client(t, cp.Config)
	create(t, c, &rbacv1.ClusterRole{ObjectMeta: objectMeta(user), Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"list", "watch", "patch"}},
		{APIGroups: []string{""}, Resources: []string{"configmaps"}, ResourceNames: []string{"selectors"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{"events.k8s.io"}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}},
	}})
	create(t, c, &rbacv1.ClusterRoleBinding{ObjectMeta: objectMeta(user),
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: user},
		Subjects: []rbacv1.Subject{{Kind: "User", Name: user}}})
	cfg := rest.CopyConfig(cp.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	return cfg
}

// With --admission-policy-owner, the pairs are owned by that ClusterRole (a
// pair an older metawatch made too, once a generation runs): deleting it,
// as helm uninstall deletes the chart's, has the garbage collector delete
// them, and a metawatch still running does not make them again.
func TestPairsGoWithTheirOwner(t *testing.T) {
	controlplane.SkipIfShort(t)
	controlplane.RequireMutatingAdmissionPolicy(t)
	cp.StartControllerManager(t)
	c := testkit.Client(t, cp.Config)
	const ns = "lo-owner"
	rule := leaveAPair(t, c, ns) // made without an owner
	role := &rbacv1.ClusterRole{ObjectMeta: objectMeta("lo-owner-role")}
	create(t, c, role)
	inst := startInstance(t, cp.Config, ns+"/selectors", allowAtCreation, func(r *reload.Reloader) { r.Settings.PolicyOwner = role.Name })
	for _, obj := range []client.Object{&admissionregistrationv1.MutatingAdmissionPolicy{}, &admissionregistrationv1.MutatingAdmissionPolicyBinding{}} {
		testkit.WaitFor(t, "the pair to be owned by the ClusterRole", testkit.Timeout, func() bool {
			if absent(t, c, obj, rule) {
				return false
			}
			refs := obj.GetOwnerReferences()
			return len(refs) == 1 && refs[0].UID == role.UID && refs[0].Kind == "ClusterRole"
		})
	}

	if err := c.Delete(t.Context(), role); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, "the garbage collector to delete the pair", testkit.Timeout, func() bool {
		return absent(t, c, &admissionregistrationv1.MutatingAdmissionPolicy{}, rule) && absent(t, c, &admissionregistrationv1.MutatingAdmissionPolicyBinding{}, rule)
	})
	testkit.WaitFor(t, "/readyz/configuration to say the owner is gone", testkit.Timeout, func() bool {
		return contains(inst.readiness(), "the ClusterRole lo-owner-role that owns the admission policies (--admission-policy-owner) does not exist")
	})
	if !absent(t, c, &admissionregistrationv1.MutatingAdmissionPolicy{}, rule) {
		t.Error("the running metawatch made the pair again without its owner")
	}
}
