package rulecontroller_test

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/metawatch/metawatch/pkg/settings"
	"github.com/metawatch/metawatch/pkg/testing/controlplane"
	"github.com/metawatch/metawatch/pkg/testing/testkit"
)

// copyFromNamespace: 500 pods in 5 namespaces get, keep and lose their
// namespace's team label as it is set, changed and removed; once converged, a
// restart (every object reconciled again) writes nothing.
func TestCopyFromNamespaceConverges(t *testing.T) {
	controlplane.SkipIfShort(t)
	c := testkit.Client(t, cp.Config)
	namespaces := []string{"copy-0", "copy-1", "copy-2", "copy-3", "copy-4"}
	for i, ns := range namespaces {
		testkit.Namespace(t, c, ns, map[string]string{"team": fmt.Sprintf("team-%d", i)})
		testkit.Pods(t, c, ns, 100)
	}
	configYAML := fmt.Sprintf("watches:\n- kind: Pod\n  namespaces: [%s]\nrules:\n- name: copy-team\n  kinds: [Pod]\n  copyFromNamespace: {labels: [team]}\n",
		strings.Join(namespaces, ", "))
	inst := startInstance(t, configYAML, tuned(func(s *settings.Settings) { s.MaxConcurrentReconciles = 8 }))
	teamIs := func(suffix string) func(string, map[string]string) bool {
		return func(ns string, l map[string]string) bool {
			return l["team"] == "team-"+strings.TrimPrefix(ns, "copy-")+suffix
		}
	}
	waitAllPods(t, c, "every pod to get its namespace's team", namespaces, teamIs(""))

	for i, ns := range namespaces {
		testkit.MergePatch(t, c, namespaceObject(ns), "kubectl-label", fmt.Sprintf(`{"metadata":{"labels":{"team":"team-%d-v2"}}}`, i))
	}
	waitAllPods(t, c, "every pod to follow its namespace's new team", namespaces, teamIs("-v2"))

	for _, ns := range namespaces {
		testkit.MergePatch(t, c, namespaceObject(ns), "kubectl-label", `{"metadata":{"labels":{"team":null}}}`)
	}
	waitAllPods(t, c, "the team label to leave every pod", namespaces, func(_ string, l map[string]string) bool {
		_, has := l["team"]
		return !has && l["app"] == "web"
	})

	for i, ns := range namespaces {
		testkit.MergePatch(t, c, namespaceObject(ns), "kubectl-label", fmt.Sprintf(`{"metadata":{"labels":{"team":"team-%d"}}}`, i))
	}
	waitAllPods(t, c, "every pod to get the team back", namespaces, teamIs(""))
	inst.stop()

	// A converged restart queues none of the 500 pods: the initial list finds
	// them as the rules want (ruleReconciler.settled). A hand edit after the
	// sync is the one thing it has to do: one write.
	before := reconcilesOf(t, "pod")
	again := startInstance(t, configYAML, tuned(func(s *settings.Settings) { s.MaxConcurrentReconciles = 8 }))
	waitCached(t, again, namespaces, 500)
	testkit.MergePatch(t, c, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: namespaces[0], Name: "pod-0"}}, "kubectl-label", `{"metadata":{"labels":{"team":null}}}`)
	waitAllPods(t, c, "the hand-removed team label to be put back", namespaces, teamIs(""))
	if n := reconcilesOf(t, "pod") - before; n > 3 {
		t.Errorf("the converged restart reconciled %v pods, want only the edited one (its removal and metawatch's own write: at most 3)", n)
	}
	if n := again.writes.Load(); n != 1 {
		t.Errorf("a converged restart and one hand edit made %d write requests, want 1", n)
	}
}

func namespaceObject(name string) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
}

func reconcilesOf(t *testing.T, controller string) float64 {
	return testkit.Metric(t, "controller_runtime_reconcile_total", map[string]string{"controller": controller})
}
