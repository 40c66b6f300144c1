package seed

import (
	"context"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Namespace creates namespace name with labels.
func Namespace(ctx context.Context, c client.Client, name string, labels map[string]string) error {
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}); err != nil {
		return fmt.Errorf("creating namespace %s: %w", name, err)
	}
	return nil
}

// Pods creates n realistic pods in namespace ns with the given concurrency,
// each then given a running status by a second field manager ("kubelet"), and
// prints progress to log every 5 seconds.
func Pods(ctx context.Context, c client.Client, ns string, n, concurrency int, log io.Writer) error {
	var done atomic.Int64
	stop := progress(log, &done, n)
	defer stop()
	return ForEach(ctx, n, concurrency, func(i int) error {
		defer done.Add(1)
		pod := Pod(ns, i)
		if err := c.Create(ctx, pod, client.FieldOwner("bench-seed")); err != nil {
			return fmt.Errorf("creating pod %s: %w", pod.Name, err)
		}
		pod.Status = RunningStatus(pod)
		return c.Status().Update(ctx, pod, client.FieldOwner("kubelet"))
	})
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
