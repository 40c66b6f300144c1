package main

import (
	"os/exec"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/metawatch/metawatch/hack/onenode"
	"github.com/metawatch/metawatch/pkg/testing/testkit"
)

// atCreationThenUninstall turns atCreation on (helm upgrade, the example
// configuration with a rule that has it), waits for the rule's pair, owned
// by the chart's ClusterRole, then runs helm uninstall: the garbage
// collector of the node's kube-controller-manager deletes the pair, so that
// no policy goes on labelling new pods for an installation that is gone.
func atCreationThenUninstall(t *testing.T, c *onenode.Cluster, cs kubernetes.Interface, helm string) {
	t.Helper()
	run(t, helm, "--kubeconfig", c.KubeconfigPath, "upgrade", "metawatch", "../../deploy/helm/metawatch", "-n", "metawatch-system",
		"--reuse-values", "--set", "atCreation.enabled=true")
	run(t, c.Kubectl, "--kubeconfig", c.KubeconfigPath, "-n", "metawatch-system", "rollout", "status", "deploy/metawatch", "--timeout=3m")
	run(t, c.Kubectl, "--kubeconfig", c.KubeconfigPath, "apply", "-n", "metawatch-system", "-f", "../../selectors/team-at-creation.yaml")
	const pair = "metawatch-team-at-creation"
	policies := cs.AdmissionregistrationV1().MutatingAdmissionPolicies()
	bindings := cs.AdmissionregistrationV1().MutatingAdmissionPolicyBindings()
	testkit.WaitFor(t, "the rule's pair, owned by the chart's ClusterRole", testkit.Timeout, func() bool {
		p, err := policies.Get(t.Context(), pair, metav1.GetOptions{})
		if err != nil {
			return false
		}
		_, err = bindings.Get(t.Context(), pair, metav1.GetOptions{})
		refs := p.OwnerReferences
		return err == nil && len(refs) == 1 && refs[0].Kind == "ClusterRole" && refs[0].Name == "metawatch"
	})

	uninstalled := time.Now()
	run(t, helm, "--kubeconfig", c.KubeconfigPath, "uninstall", "metawatch", "-n", "metawatch-system", "--wait")
	testkit.WaitFor(t, "helm uninstall to take the pair with it", 2*testkit.Timeout, func() bool {
		_, errP := policies.Get(t.Context(), pair, metav1.GetOptions{})
		_, errB := bindings.Get(t.Context(), pair, metav1.GetOptions{})
		return apierrors.IsNotFound(errP) && apierrors.IsNotFound(errB)
	})
	t.Logf("helm uninstall: the rule's admission policy and binding gone %s later", time.Since(uninstalled).Round(100*time.Millisecond))
	out, _ := exec.Command(c.Kubectl, "--kubeconfig", c.KubeconfigPath, "get", "mutatingadmissionpolicies,mutatingadmissionpolicybindings",
		"-l", "app.kubernetes.io/managed-by=metawatch", "-o", "name").CombinedOutput()
	if left := strings.TrimSpace(string(out)); left != "" && !strings.Contains(left, "No resources") {
		t.Errorf("admission policies left after helm uninstall: %s", left)
	}
}
