package testkit

import (
	"os/exec"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"
)

// ChartPodsRestricted checks the chart's pods as a cluster runs them, read
// after its rollout: at least one, each Running with the restricted
// securityContext the chart sets (read-only root, no privilege escalation,
// every capability dropped, non-root, the runtime's seccomp profile) and a
// ServiceAccount token to reach the API server with.
func ChartPodsRestricted(t testing.TB, pods []corev1.Pod) {
	t.Helper()
	if len(pods) == 0 {
		t.Fatal("the chart runs no pod")
	}
	for _, p := range pods {
		sc, psc := p.Spec.Containers[0].SecurityContext, p.Spec.SecurityContext
		ok := sc != nil && ptr.Deref(sc.ReadOnlyRootFilesystem, false) && !ptr.Deref(sc.AllowPrivilegeEscalation, true) &&
			sc.Capabilities != nil && len(sc.Capabilities.Drop) == 1 && sc.Capabilities.Drop[0] == "ALL" &&
			psc != nil && ptr.Deref(psc.RunAsNonRoot, false) &&
			psc.SeccompProfile != nil && psc.SeccompProfile.Type == corev1.SeccompProfileTypeRuntimeDefault
		if !ok {
			t.Errorf("pod %s does not run with the restricted securityContext: %+v / %+v", p.Name, psc, sc)
		}
		if !ptr.Deref(p.Spec.AutomountServiceAccountToken, true) && len(p.Spec.Volumes) == 0 {
			t.Errorf("pod %s has no ServiceAccount token", p.Name)
		}
		if p.Status.Phase != corev1.PodRunning {
			t.Errorf("pod %s is %s, not Running", p.Name, p.Status.Phase)
		}
	}
}

// ChartAlertRules are the chart's alerting rules (its PrometheusRule's
// spec, prometheusRule.enabled) for release in namespace, as a Prometheus
// rules file, rendered by helm from chartDir.
func ChartAlertRules(t testing.TB, helm, chartDir, release, namespace string) []byte {
	t.Helper()
	out, err := exec.CommandContext(t.Context(), helm, "template", release, chartDir, "--namespace", namespace,
		"--set", "prometheusRule.enabled=true", "--show-only", "templates/prometheusrule.yaml").Output()
	if err != nil {
		t.Fatalf("helm template: %v", err)
	}
	var rule struct {
		Spec map[string]any `json:"spec"`
	}
	if err := yaml.Unmarshal(out, &rule); err != nil {
		t.Fatal(err)
	}
	rules, err := yaml.Marshal(rule.Spec)
	if err != nil {
		t.Fatal(err)
	}
	return rules
}
