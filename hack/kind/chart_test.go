package main

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/metawatch/metawatch/pkg/testing/controlplane"
	"github.com/metawatch/metawatch/pkg/testing/testkit"
)

// installChart is the README's chart on kind: make image, kind load
// image-archive, a namespace that enforces the restricted Pod Security level,
// helm install with default values but the pull policy, the selectors with
// kubectl; then the demo objects, until the demo rule has labelled them.
func installChart(t *testing.T, k kubectl) (helm string) {
	t.Helper()
	ctx := t.Context()
	kind, err := controlplane.EnsureKind(ctx, os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	helm, err = controlplane.EnsureHelm(ctx, os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	mustRun(t, "make", "--no-print-directory", "image")
	mustRun(t, kind, "load", "image-archive", "bin/metawatch-image.tar", "--name", clusterName)
	k.run("create", "namespace", "metawatch-system")
	k.run("label", "namespace", "metawatch-system", "pod-security.kubernetes.io/enforce=restricted")
	installed := time.Now()
	mustRun(t, helm, "--kubeconfig", k.config, "install", "metawatch", "deploy/helm/metawatch", "-n", "metawatch-system", "--set", "image.pullPolicy=Never")
	k.run("apply", "-n", "metawatch-system", "-f", "selectors/default.yaml")
	k.run("-n", "metawatch-system", "rollout", "status", "deploy/metawatch", "--timeout=3m")
	t.Logf("the chart's pods Ready %s after helm install", time.Since(installed).Round(100*time.Millisecond))
	assertRestricted(t, k)

	k.run("apply", "-f", "hack/demo.yaml")
	deadline := time.Now().Add(2 * time.Minute)
	for {
		teams := k.run("get", "pods", "-n", "demo", "-o", `jsonpath={range .items[*]}{.metadata.name}={.metadata.labels.team}{"\n"}{end}`)
		if converged(teams, "storefront") {
			t.Logf("the demo rule copied team=storefront to every demo pod:\n%s", teams)
			return helm
		}
		if time.Now().After(deadline) {
			t.Fatalf("the demo rule did not converge in 2 minutes:\n%s", teams)
		}
		time.Sleep(time.Second)
	}
}

// converged reports whether every name=team line has team.
func converged(lines, team string) bool {
	n := 0
	for _, line := range strings.Fields(lines) {
		if !strings.HasSuffix(line, "="+team) {
			return false
		}
		n++
	}
	return n > 0
}

// assertRestricted checks the chart's running pods kept its securityContext
// (the namespace's Pod Security admission would have refused them otherwise).
func assertRestricted(t *testing.T, k kubectl) {
	t.Helper()
	var pods corev1.PodList
	if err := json.Unmarshal([]byte(k.run("get", "pods", "-n", "metawatch-system", "-o", "json")), &pods); err != nil {
		t.Fatal(err)
	}
	testkit.ChartPodsRestricted(t, pods.Items)
}

// uninstallChart removes what installChart made, so the bench measures its
// own installation alone.
func uninstallChart(t *testing.T, k kubectl, helm string) {
	t.Helper()
	k.run("delete", "-f", "hack/demo.yaml", "--wait=true")
	mustRun(t, helm, "--kubeconfig", k.config, "uninstall", "metawatch", "-n", "metawatch-system", "--wait")
	k.run("delete", "namespace", "metawatch-system", "--wait=true")
}
