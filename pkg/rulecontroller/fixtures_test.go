package rulecontroller_test

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/metawatch/metawatch/pkg/metacache"
	"github.com/metawatch/metawatch/pkg/testing/testkit"
)

// waitAllPods waits until every pod in namespaces satisfies ok(namespace, labels).
func waitAllPods(t *testing.T, c client.Client, what string, namespaces []string, ok func(ns string, labels map[string]string) bool) {
	t.Helper()
	testkit.WaitFor(t, what, testkit.Timeout, func() bool {
		for _, ns := range namespaces {
			var pods corev1.PodList
			if err := c.List(t.Context(), &pods, client.InNamespace(ns)); err != nil {
				t.Fatal(err)
			}
			for _, p := range pods.Items {
				if !ok(ns, p.Labels) {
					return false
				}
			}
		}
		return true
	})
}

func getPod(t *testing.T, c client.Client, ns, name string) *corev1.Pod {
	t.Helper()
	var pod corev1.Pod
	if err := c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, &pod); err != nil {
		t.Fatal(err)
	}
	return &pod
}

// applyAs server-side applies a metadata-only manifest for a pod as field manager "manager".
func applyAs(t *testing.T, c client.Client, ns, name, manager, labelsJSON string) {
	t.Helper()
	manifest := fmt.Sprintf(`{"apiVersion":"v1","kind":"Pod","metadata":{"namespace":%q,"name":%q,"labels":%s}}`, ns, name, labelsJSON)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	if err := c.Patch(t.Context(), pod, client.RawPatch("application/apply-patch+yaml", []byte(manifest)), client.FieldOwner(manager)); err != nil {
		t.Fatal(err)
	}
}

// podMetadata is an empty metadata-only Pod, to read from metawatch's cache.
func podMetadata() *metav1.PartialObjectMetadata {
	return metacache.NewObject(corev1.SchemeGroupVersion.WithKind("Pod"))
}
