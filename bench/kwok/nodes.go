package kwok

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/metawatch/metawatch/bench/seed"
)

// NodeLabel marks the simulated nodes; kwok manages the nodes that carry it.
const NodeLabel = "metawatch.dev/bench-kwok"

// MaxNodes bounds --kwok-nodes: each node gets a /16 of pod addresses out of 10.128.0.0/9.
const MaxNodes = 128

// taint keeps every pod but the bench's off the simulated nodes.
var taint = corev1.Taint{Key: "kwok.x-k8s.io/node", Value: "fake", Effect: corev1.TaintEffectNoSchedule}

func nodeName(i int) string { return fmt.Sprintf("metawatch-bench-kwok-%03d", i) }

// node is the i-th simulated node, shaped like a kubelet's registration.
func node(i int) *corev1.Node {
	capacity := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1k"), corev1.ResourceMemory: resource.MustParse("1Ti"),
		corev1.ResourcePods: resource.MustParse("1M")}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name: nodeName(i),
			Labels: map[string]string{NodeLabel: "true", seed.BenchLabel: "true", "type": "kwok",
				"kubernetes.io/hostname": nodeName(i), "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64"},
			Annotations: map[string]string{"kwok.x-k8s.io/node": "fake", "node.alpha.kubernetes.io/ttl": "0"},
		},
		Spec: corev1.NodeSpec{
			// Addresses kwok hands out to the node's pods: written into pod
			// statuses only, never routed (10.128.0.0/9 is outside every range
			// of make cluster's network namespace).
			PodCIDR: fmt.Sprintf("10.%d.0.0/16", 128+i),
			Taints:  []corev1.Taint{taint},
		},
		Status: corev1.NodeStatus{Capacity: capacity, Allocatable: capacity},
	}
}

// createNodes creates nodes 0..n-1, keeping any already there (a --keep run's).
func createNodes(ctx context.Context, c client.Client, n int) ([]string, error) {
	if n < 1 || n > MaxNodes {
		return nil, fmt.Errorf("%d simulated nodes asked for: give 1 to %d", n, MaxNodes)
	}
	names := make([]string, n)
	for i := range n {
		names[i] = nodeName(i)
		if err := c.Create(ctx, node(i), client.FieldOwner("kubelet")); err != nil && !apierrors.IsAlreadyExists(err) {
			return nil, fmt.Errorf("creating simulated node %s: %w", names[i], err)
		}
	}
	return names, nil
}

// DeleteNodes deletes the simulated nodes of this or an earlier run. Their
// pods are in the bench's namespaces, which go with seed.Delete.
func DeleteNodes(ctx context.Context, c client.Client) error {
	return client.IgnoreNotFound(c.DeleteAllOf(ctx, &corev1.Node{}, client.MatchingLabels{NodeLabel: "true"}))
}

// waitReady polls until every node is Ready (kwok's node-initialize stage), for up to timeout.
func (k *Kwok) waitReady(ctx context.Context, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		notReady, err := countNotReady(ctx, k.client, k.nodes)
		if err != nil || notReady == 0 {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d of %d simulated nodes are not Ready after %s (kwok's log: %s)", notReady, len(k.nodes), timeout, k.logPath())
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}

func countNotReady(ctx context.Context, c client.Client, names []string) (int, error) {
	var list corev1.NodeList
	if err := c.List(ctx, &list, client.MatchingLabels{NodeLabel: "true"}); err != nil {
		return 0, err
	}
	ready := map[string]bool{}
	for _, n := range list.Items {
		for _, cond := range n.Status.Conditions {
			ready[n.Name] = ready[n.Name] || cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue
		}
	}
	notReady := 0
	for _, name := range names {
		if !ready[name] {
			notReady++
		}
	}
	return notReady, nil
}

// Schedule binds pod, the i-th of the population, to a node as the
// scheduler would, and lets it tolerate the nodes' taint. The i-th pod is
// the (i/AppsPerNamespace)-th of app i%AppsPerNamespace: their sum picks the
// node, so that both the apps and each app's pods spread over the nodes.
func (k *Kwok) Schedule(pod *corev1.Pod, i int) {
	pod.Spec.NodeName = k.nodes[(i%seed.AppsPerNamespace+i/seed.AppsPerNamespace)%len(k.nodes)]
	pod.Spec.SchedulerName, pod.Spec.NodeSelector = "", nil
	pod.Spec.Tolerations = append(pod.Spec.Tolerations, corev1.Toleration{Key: taint.Key, Operator: corev1.TolerationOpEqual, Value: taint.Value, Effect: taint.Effect})
}
