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

// Pods creates n pods named pod-0.. in ns, labelled app=web, by 16
// workers (not a goroutine per pod: n may be 100,000); the first error
// stops them.
func Pods(t testing.TB, c client.Client, ns string, n int) {
	t.Helper()
	next := make(chan int)
	var wg sync.WaitGroup
	var once sync.Once
	var failed error
	stop := make(chan struct{})
	for range min(16, n) {
		wg.Go(func() {
			for i := range next {
				pod := &corev1.Pod{
					ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("pod-%d", i), Labels: map[string]string{"app": "web"}},
					Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.example/app:1"}}},
				}
				if err := c.Create(t.Context(), pod); err != nil {
					once.Do(func() { failed = err; close(stop) })
				}
			}
		})
	}
feed:
	for i := range n {
		select {
		case next <- i:
		case <-stop:
			break feed
		}
	}
	close(next)
	wg.Wait()
	if failed != nil {
		t.Fatal(failed)
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
