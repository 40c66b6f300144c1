package scenario

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
)

func pod(namespace, name, value string) *metav1.PartialObjectMetadata {
	return &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Labels: map[string]string{"cost-center": value}}}
}

// A pod deleted while the fan-out runs is not waited for, whether the
// informer hands over the pod or a tombstone of it.
func TestObserverForgetsDeletedPods(t *testing.T) {
	for name, deleted := range map[string]any{
		"the deleted pod itself":   pod("a", "gone", "old"),
		"a tombstone of the pod":   toolscache.DeletedFinalStateUnknown{Key: "a/gone", Obj: pod("a", "gone", "old")},
		"a pod that carried value": pod("a", "gone", "new"),
	} {
		t.Run(name, func(t *testing.T) {
			o := newObserver("cost-center", true)
			o.see(pod("a", "stays", "old"))
			o.see(pod("a", "gone", "old"))
			o.expect("new")
			o.see(pod("a", "stays", "new"))
			if p, ok := deleted.(*metav1.PartialObjectMetadata); ok && p.Labels["cost-center"] == "new" {
				o.see(p)
			}
			o.forget(deleted)
			ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
			defer cancel()
			if err := o.waitAll(ctx, "new", time.Second); err != nil {
				t.Fatalf("waitAll: %v, want done: the one pod left carries the value", err)
			}
			if got := o.Pods(); len(got) != 1 || got[0] != "a/stays" {
				t.Errorf("pods %v, want only a/stays", got)
			}
		})
	}
}

// A pod no writer changes stops the wait once nothing has moved for
// stallAfter, long before the timeout, and the error names it.
func TestWaitAllGivesUpOnAStallNamingThePods(t *testing.T) {
	o := newObserver("cost-center", true)
	o.stallAfter = 50 * time.Millisecond
	o.see(pod("a", "done", "new"))
	o.see(pod("a", "forgotten", "old"))
	o.expect("new")
	err := o.waitAll(t.Context(), "new", time.Hour)
	if err == nil || !strings.Contains(err.Error(), "1 of 2 pods") || !strings.Contains(err.Error(), "a/forgotten") {
		t.Fatalf("waitAll: %v, want an error counting 1 of 2 pods and naming a/forgotten", err)
	}
}

// WaitPods holds the fan-out until the observer has been handed the pods
// the seeding made, and says how many it has if they do not come.
func TestWaitPodsWaitsForTheSeededPods(t *testing.T) {
	o := newObserver("cost-center", true)
	o.see(pod("a", "first", "old"))
	go func() {
		time.Sleep(20 * time.Millisecond)
		o.see(pod("b", "late", "old"))
	}()
	if err := o.WaitPods(t.Context(), 2, 5*time.Second); err != nil {
		t.Fatalf("WaitPods(2): %v", err)
	}
	if err := o.WaitPods(t.Context(), 3, 50*time.Millisecond); err == nil || !strings.Contains(err.Error(), "holds 2 pods") {
		t.Errorf("WaitPods(3): %v, want an error saying it holds 2 pods", err)
	}
}
