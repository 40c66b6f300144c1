package testkit

import (
	"os/exec"
	"testing"

	"sigs.k8s.io/yaml"
)

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
