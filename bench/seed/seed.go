package seed

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Population is the harness's objects: pods spread over namespaces of
// PerNamespace pods each, every namespace with its apps' workloads.
type Population struct {
	Client       client.Client
	PerNamespace int
	Concurrency  int
	Log          io.Writer
	// Schedule, if set, binds the i-th pod to a node before it is created
	// (kwok's simulated nodes): that node's kubelet then writes its status.
	// Unset, the harness writes a running status itself, as no kubelet will.
	Schedule func(pod *corev1.Pod, i int)
	// Lean pods have the same metadata but one bare container (LeanPod).
	Lean bool
	// owners are the uids of the pods' owner ReplicaSets by namespace/name,
	// recorded as Grow creates them.
	owners sync.Map
}

// NamespaceName is the name of the k-th namespace of the population.
func NamespaceName(k int) string { return fmt.Sprintf("metawatch-bench-%03d", k) }

// Grow creates pods from..to-1 and, for each namespace they are the first
// pods of, the namespace and its workloads.
func (p *Population) Grow(ctx context.Context, from, to int) error {
	for k := (from + p.PerNamespace - 1) / p.PerNamespace; k*p.PerNamespace < to; k++ {
		if err := p.namespace(ctx, k); err != nil {
			return err
		}
	}
	var done atomic.Int64
	stop := progress(p.Log, &done, to-from)
	defer stop()
	return ForEach(ctx, to-from, p.Concurrency, func(i int) error {
		defer done.Add(1)
		i += from
		pod := Pod(NamespaceName(i/p.PerNamespace), i%p.PerNamespace)
		if p.Lean {
			pod = LeanPod(pod)
		}
		if uid, ok := p.owners.Load(pod.Namespace + "/" + pod.OwnerReferences[0].Name); ok {
			pod.OwnerReferences[0].UID = uid.(types.UID)
		}
		if p.Schedule != nil {
			p.Schedule(pod, i)
		}
		return createPod(ctx, p.Client, pod)
	})
}

func (p *Population) namespace(ctx context.Context, k int) error {
	ns := NamespaceName(k)
	if err := p.Client.Create(ctx, NamespaceObject(k), client.FieldOwner("kubectl-client-side-apply")); err != nil {
		return fmt.Errorf("creating namespace %s: %w", ns, err)
	}
	return ForEach(ctx, AppsPerNamespace, p.Concurrency, func(i int) error {
		for _, obj := range Workloads(ns, i) {
			if err := p.Client.Create(ctx, obj, client.FieldOwner("kubectl-client-side-apply")); err != nil {
				return fmt.Errorf("creating %T %s/%s: %w", obj, ns, obj.GetName(), err)
			}
			if _, ok := obj.(*appsv1.ReplicaSet); ok {
				p.owners.Store(ns+"/"+obj.GetName(), obj.GetUID())
			}
		}
		return nil
	})
}

// createPod creates pod as its creator would, then, unless it is bound to a
// node whose kubelet does it, gives it a running status as a second field
// manager ("kubelet").
func createPod(ctx context.Context, c client.Client, pod *corev1.Pod) error {
	err := c.Create(ctx, pod, client.FieldOwner("kube-controller-manager"))
	// On a cluster with a controller-manager, a new namespace's default
	// ServiceAccount comes a moment after it, and pods are refused until then.
	for deadline := time.Now().Add(time.Minute); noServiceAccountYet(err) && time.Now().Before(deadline); {
		time.Sleep(200 * time.Millisecond)
		err = c.Create(ctx, pod, client.FieldOwner("kube-controller-manager"))
	}
	if err != nil {
		return fmt.Errorf("creating pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	if pod.Spec.NodeName != "" {
		return nil
	}
	pod.Status = RunningStatus(pod)
	return c.Status().Update(ctx, pod, client.FieldOwner("kubelet"))
}

func noServiceAccountYet(err error) bool {
	return apierrors.IsForbidden(err) && strings.Contains(err.Error(), "error looking up service account")
}

// Leftover fails when namespaces of an earlier run are still there: the
// harness counts objects and would count theirs.
func Leftover(ctx context.Context, c client.Client) error {
	var list corev1.NamespaceList
	if err := c.List(ctx, &list, client.MatchingLabels{BenchLabel: "true"}); err != nil {
		return err
	}
	if len(list.Items) > 0 {
		return fmt.Errorf("%d namespaces of an earlier bench run are still there (%s, ...): "+
			"delete them with `kubectl delete namespace -l %s` and run again", len(list.Items), list.Items[0].Name, Selector)
	}
	return nil
}

// Delete deletes the population's namespaces; their objects go with them.
func Delete(ctx context.Context, c client.Client) error {
	var list corev1.NamespaceList
	if err := c.List(ctx, &list, client.MatchingLabels{BenchLabel: "true"}); err != nil {
		return err
	}
	for i := range list.Items {
		if err := c.Delete(ctx, &list.Items[i]); client.IgnoreNotFound(err) != nil {
			return err
		}
	}
	return nil
}

// DeleteAndWait deletes the bench's namespaces and waits until they are gone.
func DeleteAndWait(ctx context.Context, c client.Client) error {
	if err := Delete(ctx, c); err != nil {
		return err
	}
	for {
		var list corev1.NamespaceList
		if err := c.List(ctx, &list, client.MatchingLabels{BenchLabel: "true"}); err != nil {
			return err
		}
		if len(list.Items) == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%d namespaces still terminating: %w", len(list.Items), context.Cause(ctx))
		case <-time.After(2 * time.Second):
		}
	}
}

// ForEach runs f(0..n-1) on concurrency workers and returns the first error.
func ForEach(ctx context.Context, n, concurrency int, f func(int) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	work := make(chan int)
	var wg sync.WaitGroup
	for range concurrency {
		wg.Go(func() {
			for i := range work {
				if err := f(i); err != nil {
					cancel(err)
				}
			}
		})
	}
	for i := 0; i < n && ctx.Err() == nil; i++ {
		work <- i
	}
	close(work)
	wg.Wait()
	return context.Cause(ctx)
}

func progress(log io.Writer, done *atomic.Int64, total int) (stop func()) {
	ticker := time.NewTicker(5 * time.Second)
	quit := make(chan struct{})
	go func() {
		for {
			select {
			case <-quit:
				return
			case <-ticker.C:
				fmt.Fprintf(log, "seed: %d/%d pods\n", done.Load(), total)
			}
		}
	}()
	return func() { ticker.Stop(); close(quit) }
}
