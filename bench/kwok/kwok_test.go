package kwok

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/metawatch/metawatch/bench/scenario"
	"github.com/metawatch/metawatch/bench/seed"
	"github.com/metawatch/metawatch/pkg/testing/controlplane"
	"github.com/metawatch/metawatch/pkg/testing/testkit"
)

var cp *controlplane.ControlPlane

func TestMain(m *testing.M) { os.Exit(controlplane.RunTests(m, &cp)) }

// kwok, on a real API server, plays the kubelet of the pods bound to its
// nodes: it keeps the nodes Ready and their Leases renewed, makes the pods Running, sends status
// updates while probes are on and none once they are off, finishes a pod's
// deletion, and leaves nothing running when stopped.
func TestKwokPlaysTheKubelet(t *testing.T) {
	controlplane.SkipIfShort(t)
	ctx := t.Context()
	cfg, err := clientcmd.BuildConfigFromFlags("", cp.KubeconfigPath)
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	k, err := Start(ctx, c, cp.KubeconfigPath, 2, testWriter{t})
	if err != nil {
		t.Fatal(err)
	}
	stopped := false
	defer func() {
		if !stopped {
			_ = k.Stop()
		}
	}()

	checkLeases(t, c, k.Nodes())

	const pods = 6
	population := seed.Population{Client: c, PerNamespace: pods, Concurrency: 4, Log: testWriter{t}, Schedule: k.Schedule}
	if err := population.Grow(ctx, 0, pods); err != nil {
		t.Fatal(err)
	}
	if err := k.WaitRunning(ctx, seed.Selector, time.Minute, testWriter{t}); err != nil {
		t.Fatal(err)
	}
	ns := seed.NamespaceName(0)
	checkBoundAndRunning(t, c, ns, k.Nodes())

	observer, err := scenario.Observe(ctx, cfg, ns, seed.Selector, "cost-center")
	if err != nil {
		t.Fatal(err)
	}
	stopProbes, err := k.Probe(ctx, ns, pods, 3) // a period of 2 s per pod
	if err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, fmt.Sprintf("%d status updates with probes on", 2*pods), testkit.Timeout, func() bool { return observer.StatusUpdates() >= 2*pods })
	if err := stopProbes(); err != nil {
		t.Fatal(err)
	}
	// Probes off: over five periods, no pod's status changes.
	settled := observer.StatusUpdates()
	time.Sleep(10 * time.Second)
	if n := observer.StatusUpdates() - settled; n > 0 {
		t.Errorf("%d status updates after the probes were turned off, want none", n)
	}

	checkDeletionFinishes(t, c, ns)

	if err := k.Stop(); err != nil {
		t.Fatal(err)
	}
	stopped = true
	if _, err := os.Stat(k.dir); !os.IsNotExist(err) {
		t.Errorf("kwok's directory %s is still there after Stop", k.dir)
	}
	if err := DeleteNodes(ctx, c); err != nil {
		t.Fatal(err)
	}
	var left corev1.NodeList
	if err := c.List(ctx, &left, client.MatchingLabels{NodeLabel: "true"}); err != nil || len(left.Items) > 0 {
		t.Errorf("simulated nodes after DeleteNodes: %d (%v), want none", len(left.Items), err)
	}
}

// checkLeases: every node has a Lease kwok renews, as a kubelet does;
// without one the node lifecycle controller marks the node NotReady after its
// grace period, and every pod on it not Ready.
func checkLeases(t *testing.T, c client.Client, nodes []string) {
	t.Helper()
	for _, n := range nodes {
		var lease coordinationv1.Lease
		testkit.WaitFor(t, "node "+n+"'s Lease in "+corev1.NamespaceNodeLease, testkit.Timeout, func() bool {
			return c.Get(t.Context(), client.ObjectKey{Namespace: corev1.NamespaceNodeLease, Name: n}, &lease) == nil
		})
		if lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity == "" || lease.Spec.RenewTime == nil {
			t.Errorf("node %s: Lease %+v, want one held (by kwok) and renewed", n, lease.Spec)
		}
	}
}

func checkBoundAndRunning(t *testing.T, c client.Client, ns string, nodes []string) {
	t.Helper()
	var list corev1.PodList
	if err := c.List(t.Context(), &list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	onNode := map[string]int{}
	for _, p := range list.Items {
		onNode[p.Spec.NodeName]++
		if p.Status.Phase != corev1.PodRunning || !strings.HasPrefix(p.Status.PodIP, "10.12") {
			t.Errorf("pod %s: phase %s, IP %q; want Running with an address from its node's 10.128.0.0/9 range", p.Name, p.Status.Phase, p.Status.PodIP)
		}
	}
	for _, n := range nodes {
		if onNode[n] != len(list.Items)/len(nodes) {
			t.Errorf("pods by node %v, want them spread evenly over %v", onNode, nodes)
			break
		}
	}
}

// checkDeletionFinishes deletes a pod gracefully: only its kubelet (kwok)
// can finish that.
func checkDeletionFinishes(t *testing.T, c client.Client, ns string) {
	t.Helper()
	var list corev1.PodList
	if err := c.List(t.Context(), &list, client.InNamespace(ns), client.Limit(1)); err != nil || len(list.Items) == 0 {
		t.Fatalf("no pod to delete: %v", err)
	}
	pod := &list.Items[0]
	if err := c.Delete(t.Context(), pod, client.GracePeriodSeconds(30)); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, "pod "+pod.Name+" to go after its graceful deletion (only its kubelet, kwok, can finish that)", testkit.Timeout, func() bool {
		return apierrors.IsNotFound(c.Get(t.Context(), client.ObjectKeyFromObject(pod), &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}}))
	})
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}
