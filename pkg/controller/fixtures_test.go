package controller_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/metawatch/metawatch/pkg/metacache"
	"github.com/metawatch/metawatch/pkg/testing/testkit"
)

// createPods creates n pods named pod-0.. in ns, 16 at a time.
func createPods(t *testing.T, c client.Client, ns string, n int) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	sem := make(chan struct{}, 16)
	for i := range n {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			pod := &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("pod-%d", i), Labels: map[string]string{"app": "web"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.example/app:1"}}},
			}
			if err := c.Create(context.Background(), pod); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// waitAllPods waits until every pod in namespaces satisfies ok(namespace, labels).
func waitAllPods(t *testing.T, c client.Client, what string, namespaces []string, ok func(ns string, labels map[string]string) bool) {
	t.Helper()
	testkit.WaitFor(t, what, func() bool {
		for _, ns := range namespaces {
			var pods corev1.PodList
			if err := c.List(context.Background(), &pods, client.InNamespace(ns)); err != nil {
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
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &pod); err != nil {
		t.Fatal(err)
	}
	return &pod
}

// applyAs server-side applies a metadata-only manifest for a pod as field manager "manager".
func applyAs(t *testing.T, c client.Client, ns, name, manager, labelsJSON string) {
	t.Helper()
	manifest := fmt.Sprintf(`{"apiVersion":"v1","kind":"Pod","metadata":{"namespace":%q,"name":%q,"labels":%s}}`, ns, name, labelsJSON)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	if err := c.Patch(context.Background(), pod, client.RawPatch("application/apply-patch+yaml", []byte(manifest)), client.FieldOwner(manager)); err != nil {
		t.Fatal(err)
	}
}

// podMetadata is an empty metadata-only Pod, to read from metawatch's cache.
func podMetadata() *metav1.PartialObjectMetadata {
	return metacache.NewObject(corev1.SchemeGroupVersion.WithKind("Pod"))
}
