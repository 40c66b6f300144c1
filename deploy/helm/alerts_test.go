package helm_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/metawatch/metawatch/pkg/testing/controlplane"
	"github.com/metawatch/metawatch/pkg/testing/testkit"
)

// The chart's alerts pass promtool: the rules check, and every alert's unit
// tests (firing, and not firing) pass, with the default thresholds.
func TestAlertsPassPromtool(t *testing.T) {
	p, err := controlplane.EnsurePrometheus(t.Context(), os.Stderr)
	if err != nil {
		t.Skipf("no promtool: %v", err)
	}
	helmBin, err := controlplane.EnsureHelm(t.Context(), os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	rules := testkit.ChartAlertRules(t, helmBin, repoFile(t, "deploy/helm/metawatch"), "mw", "mw")
	dir := t.TempDir()
	write := func(name string, data []byte) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	t.Log(run(t, "", p.Promtool, "check", "rules", write("rendered.yaml", rules)))
	// The unit tests test when alerts fire, with which labels: they run on
	// the rules without their annotations, which promtool would otherwise
	// compare word for word.
	write("rules.yaml", withoutAnnotations(t, rules))
	tests, err := os.ReadFile("testdata/alerts.promtool.yaml")
	if err != nil {
		t.Fatal(err)
	}
	t.Log(run(t, "", p.Promtool, "test", "rules", write("alerts.promtool.yaml", tests)))
	for _, alert := range alertNames(t, rules) {
		if !strings.Contains(string(tests), "alertname: "+alert) {
			t.Errorf("alert %s has no unit test in testdata/alerts.promtool.yaml", alert)
		}
		if !strings.Contains(readme(t), "#### "+alert) {
			t.Errorf("alert %s has no runbook section (#### %s) in the chart's README", alert, alert)
		}
	}
}

func withoutAnnotations(t *testing.T, rules []byte) []byte {
	var spec map[string][]map[string]any
	if err := yaml.Unmarshal(rules, &spec); err != nil {
		t.Fatal(err)
	}
	for _, g := range spec["groups"] {
		for _, r := range g["rules"].([]any) {
			delete(r.(map[string]any), "annotations")
		}
	}
	out, err := yaml.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func alertNames(t *testing.T, rules []byte) []string {
	var spec struct {
		Groups []struct {
			Rules []struct {
				Alert string `json:"alert"`
			} `json:"rules"`
		} `json:"groups"`
	}
	if err := yaml.Unmarshal(rules, &spec); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, g := range spec.Groups {
		for _, r := range g.Rules {
			out = append(out, r.Alert)
		}
	}
	return out
}

func readme(t *testing.T) string {
	b, err := os.ReadFile(repoFile(t, "deploy/helm/metawatch/README.md"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
