package testkit

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/metawatch/metawatch/pkg/testing/controlplane"
)

// Populated is the opening most integration tests share: it skips the test
// under -short, then returns a client of cp with namespace ns (labelled
// nsLabels) holding n pods (see Pods). cp may be nil under -short: it is
// not touched before the skip.
func Populated(t testing.TB, cp *controlplane.ControlPlane, ns string, nsLabels map[string]string, n int) client.Client {
	t.Helper()
	controlplane.SkipIfShort(t)
	c := Client(t, cp.Config)
	Namespace(t, c, ns, nsLabels)
	Pods(t, c, ns, n)
	return c
}

// Pods creates n pods named pod-0.. in ns, labelled app=web, 16 at a time.
func Pods(t testing.TB, c client.Client, ns string, n int) {
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
			if err := c.Create(t.Context(), pod); err != nil {
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

// NamespaceWithPods is one manifest, for kubectl apply: Namespace ns with
// nsLabels (a YAML flow mapping, e.g. "team: red"), then n pods in it named
// prefix-0.. with podLabels.
func NamespaceWithPods(ns, nsLabels, prefix, podLabels string, n int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "apiVersion: v1\nkind: Namespace\nmetadata: {name: %s, labels: {%s}}\n", ns, nsLabels)
	for i := range n {
		fmt.Fprintf(&b, "---\napiVersion: v1\nkind: Pod\nmetadata: {name: %s-%d, namespace: %s, labels: {%s}}\nspec: {containers: [{name: app, image: %s}]}\n",
			prefix, i, ns, podLabels, PodImage)
	}
	return b.String()
}
