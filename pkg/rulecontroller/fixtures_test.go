package rulecontroller_test

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/metawatch/metawatch/pkg/metacache"
	"github.com/metawatch/metawatch/pkg/testing/testkit"
)

// waitAllPods waits until every pod in namespaces satisfies ok(namespace, labels).
func waitAllPods(t *testing.T, c client.Client, what string, namespaces []string, ok func(ns string, labels map[string]string) bool) {
	t.Helper()
	waitAllPodKeys(t, c, testkit.KeyTypes["labels"], what, namespaces, ok)
}

// waitAllPodKeys waits until every pod in namespaces satisfies ok(namespace,
// keys), keys the pod's map of kt.
func waitAllPodKeys(t *testing.T, c client.Client, kt testkit.KeyType, what string, namespaces []string, ok func(ns string, keys map[string]string) bool) {
	t.Helper()
	testkit.WaitFor(t, what, testkit.Timeout, func() bool {
		for _, ns := range namespaces {
			var pods corev1.PodList
			if err := c.List(t.Context(), &pods, client.InNamespace(ns)); err != nil {
				t.Fatal(err)
			}
			for _, p := range pods.Items {
				if !ok(ns, kt.Of(&p)) {
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

// applyAs server-side applies a metadata-only manifest for a pod as field
// manager "manager", with keysJSON as its map of kt.
func applyAs(t *testing.T, c client.Client, kt testkit.KeyType, ns, name, manager, keysJSON string) {
	t.Helper()
	applyPod(t, c, kt, ns, name, manager, keysJSON)
}

// forceApplyAs is applyAs taking the keys from whoever owns them (force).
func forceApplyAs(t *testing.T, c client.Client, kt testkit.KeyType, ns, name, manager, keysJSON string) {
	t.Helper()
	applyPod(t, c, kt, ns, name, manager, keysJSON, client.ForceOwnership)
}

func applyPod(t *testing.T, c client.Client, kt testkit.KeyType, ns, name, manager, keysJSON string, opts ...client.PatchOption) {
	t.Helper()
	manifest := fmt.Sprintf(`{"apiVersion":"v1","kind":"Pod","metadata":{"namespace":%q,"name":%q,%q:%s}}`, ns, name, kt.Field, keysJSON)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	opts = append(opts, client.FieldOwner(manager))
	if err := c.Patch(t.Context(), pod, client.RawPatch(types.ApplyPatchType, []byte(manifest)), opts...); err != nil {
		t.Fatal(err)
	}
}

// metricSince is a metric as it grows from now: the tests of the package
// run in one process, one after another, and a series they share (a
// counter, or a gauge whose instances are stopped without taking back what
// they added) keeps what the tests before added.
func metricSince(t *testing.T, name string, labels map[string]string) func() float64 {
	t.Helper()
	before := testkit.Metric(t, name, labels)
	return func() float64 { return testkit.Metric(t, name, labels) - before }
}

// podMetadata is an empty metadata-only Pod, to read from metawatch's cache.
func podMetadata() *metav1.PartialObjectMetadata {
	return metacache.NewObject(corev1.SchemeGroupVersion.WithKind("Pod"))
}
