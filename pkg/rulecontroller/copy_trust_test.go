package rulecontroller_test

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/metawatch/metawatch/pkg/testing/controlplane"
	"github.com/metawatch/metawatch/pkg/testing/testkit"
)

// An annotation copied from the Namespace is kept in the pods' cache: a
// converged restart writes nothing, and a hand edit of the copied annotation
// is seen and put back.
func TestCopiedAnnotationIsCachedSoARestartWritesNothing(t *testing.T) {
	controlplane.SkipIfShort(t)
	c := testkit.Client(t, cp.Config)
	if err := c.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		Name: "copy-ann", Annotations: map[string]string{"example.com/owner": "alice"}}}); err != nil {
		t.Fatal(err)
	}
	testkit.Pods(t, c, "copy-ann", 20)
	configYAML := "watches:\n- kind: Pod\n  namespaces: [copy-ann]\nrules:\n- name: copy-owner\n  kinds: [Pod]\n  copyFromNamespace: {annotations: [example.com/owner]}\n"
	ownerIs := func(want string) func() bool {
		return func() bool {
			var pods corev1.PodList
			if err := c.List(t.Context(), &pods, client.InNamespace("copy-ann")); err != nil {
				t.Fatal(err)
			}
			for _, p := range pods.Items {
				if p.Annotations["example.com/owner"] != want {
					return false
				}
			}
			return len(pods.Items) == 20
		}
	}
	inst := startInstance(t, configYAML, tuning{})
	testkit.WaitFor(t, "every pod to get the namespace's owner annotation", testkit.Timeout, ownerIs("alice"))
	inst.stop()

	again := startInstance(t, configYAML, tuning{})
	waitCached(t, again, []string{"copy-ann"}, 20)
	testkit.MergePatch(t, c, getPod(t, c, "copy-ann", "pod-3"), "kubectl-annotate", `{"metadata":{"annotations":{"example.com/owner":"mallory"}}}`)
	testkit.WaitFor(t, "the hand-edited annotation to be put back", testkit.Timeout, ownerIs("alice"))
	// Putting a hand edit back is two requests: an apply that meets the hand
	// edit's ownership (409), then the forced one. The restart itself: none.
	if n := again.writes.Load(); n != 2 {
		t.Errorf("a converged restart and one hand edit of a copied annotation made %d write requests, want 2 (the put-back)", n)
	}
}

// A Namespace and its pods applied in one `kubectl apply` converge, and so do
// pods that reach the cache while their Namespace has not (its watch lags,
// as during a relist): such a pod waits for its Namespace instead of being
// judged to need nothing.
func TestPodsCreatedBeforeTheirNamespaceIsCachedConverge(t *testing.T) {
	controlplane.SkipIfShort(t)
	configYAML := func(ns string) string {
		return fmt.Sprintf("watches:\n- kind: Pod\n  namespaces: [%s]\nrules:\n- name: copy-team-%s\n  kinds: [Pod]\n  copyFromNamespace: {labels: [team]}\n", ns, ns)
	}
	c := testkit.Client(t, cp.Config)
	t.Run("in one kubectl apply", func(t *testing.T) {
		startInstance(t, configYAML("one-apply"), tuning{})
		kubectlApply(t, testkit.NamespaceWithPods("one-apply", "team: blue", "pod", "app: web", 50))
		waitAllPods(t, c, "all 50 pods to get the team label", []string{"one-apply"}, func(_ string, l map[string]string) bool { return l["team"] == "blue" })
	})
	t.Run("while the Namespace watch lags", func(t *testing.T) {
		gate := &testkit.StreamGate{Resource: "namespaces"}
		inst := startInstanceVia(t, configYAML("lagging"), tuning{}, gate.Wrap)
		waitCached(t, inst, []string{"lagging"}, 0)
		gate.Pause()
		kubectlApply(t, testkit.NamespaceWithPods("lagging", "team: blue", "pod", "app: web", 50))
		waitCached(t, inst, []string{"lagging"}, 50)
		gate.Resume()
		waitAllPods(t, c, "all 50 pods to get the team label", []string{"lagging"}, func(_ string, l map[string]string) bool { return l["team"] == "blue" })
	})
}

func kubectlApply(t *testing.T, manifest string) {
	t.Helper()
	if err := testkit.KubectlApply(cp.Binaries.Kubectl, cp.KubeconfigPath, manifest); err != nil {
		t.Fatal(err)
	}
}
