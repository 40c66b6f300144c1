// Package testkit holds the helpers metawatch's tests on the local control
// plane share: clients and fixtures, metrics read from controller-runtime's
// registry, and waiting for convergence (never a timing assertion).
package testkit

import (
	"context"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/metawatch/metawatch/pkg/testing/loopback"
)

// PodImage is in every test pod's spec, and so never in a metadata-only response.
const PodImage = "registry.example/app:1"

// Timeout bounds every WaitFor: it is how long convergence may take, not a
// performance bound. It is sized for a loaded machine (make test beside
// another make test on two cores, load average 10-14, where a convergence
// of seconds can take a minute): a wait ends as soon as its condition
// holds, so a passing test never waits it out, and only a failure takes
// longer to report.
const Timeout = 3 * time.Minute

// Client is a direct (uncached) client for cfg.
func Client(t testing.TB, cfg *rest.Config) client.Client {
	t.Helper()
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// Namespace creates namespace name with labels.
func Namespace(t testing.TB, c client.Client, name string, labels map[string]string) {
	t.Helper()
	if err := c.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}); err != nil {
		t.Fatal(err)
	}
}

// Pod creates a one-container pod and returns it.
func Pod(t testing.TB, c client.Client, ns, name string, labels map[string]string) *corev1.Pod {
	t.Helper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: PodImage}}},
	}
	if err := c.Create(context.Background(), pod); err != nil {
		t.Fatal(err)
	}
	return pod
}

// Metric sums the counter and gauge samples of name whose labels include want.
func Metric(t testing.TB, name string, want map[string]string) float64 {
	t.Helper()
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			if hasLabels(m, want) {
				sum += m.GetCounter().GetValue() + m.GetGauge().GetValue()
			}
		}
	}
	return sum
}

func hasLabels(m *dto.Metric, want map[string]string) bool {
	found := 0
	for _, l := range m.GetLabel() {
		if v, ok := want[l.GetName()]; ok && v == l.GetValue() {
			found++
		}
	}
	return found == len(want)
}

// WaitFor polls cond every 50ms until it holds, failing the test after
// timeout (Timeout, where nothing else bounds the wait).
func WaitFor(t testing.TB, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// FreeAddress is a 127.0.0.1 address nothing listens on, for a server the
// test starts, outside the ports outgoing connections take.
func FreeAddress(t testing.TB) string {
	t.Helper()
	address, err := loopback.FreeAddress()
	if err != nil {
		t.Fatal(err)
	}
	return address
}
