package informer_test

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/metawatch/metawatch/pkg/informer"
	"github.com/metawatch/metawatch/pkg/metacache"
	"github.com/metawatch/metawatch/pkg/testing/testkit"
)

// Against a real kube-apiserver: a controller-runtime cache whose informer
// is the streaming one syncs the pods, serves reads and handler events, and
// after a forced relist (its watch, cut off while pods were deleted and
// relabelled, answers a 410) holds what the API server holds: the deleted
// pods swept out (each a delete of a DeletedFinalStateUnknown), the
// relabelled one updated, and Relisting false again.
func TestACacheRelistsOnARealAPIServer(t *testing.T) {
	const ns, n = "informer-relist", 30
	c := testkit.Populated(t, cp, ns, nil, n)
	lw := &cutOff{}
	var inf *informer.Informer
	gvk := corev1.SchemeGroupVersion.WithKind("Pod")
	pods := metacache.NewObject(gvk)
	cc, err := cache.New(cp.Config, cache.Options{
		ByObject: map[client.Object]cache.ByObject{pods: {Namespaces: map[string]cache.Config{ns: {}}}},
		NewInformer: func(in toolscache.ListerWatcher, obj runtime.Object, resync time.Duration, indexers toolscache.Indexers) toolscache.SharedIndexInformer {
			lw.in = toolscache.ToListerWatcherWithContext(in)
			inf = informer.New(&toolscache.ListWatch{ListWithContextFunc: lw.ListWithContext, WatchFuncWithContext: lw.WatchWithContext}, obj, resync, indexers, informer.Options{})
			return inf
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	shared, err := cc.GetInformer(t.Context(), pods)
	if err != nil {
		t.Fatal(err)
	}
	rec := newRecorder()
	if _, err := shared.AddEventHandler(rec); err != nil {
		t.Fatal(err)
	}
	var relisted atomic.Int32
	inf.OnRelisted(func() { relisted.Add(1) })
	testkit.Start(t, cc)
	if !cc.WaitForCacheSync(t.Context()) {
		t.Fatal("the cache did not sync")
	}
	if got := cachedNames(t, cc, ns); len(got) != n {
		t.Fatalf("the cache serves %d pods, want %d", len(got), n)
	}

	lw.cut.Store(true) // the watch hears nothing more
	for i := range 3 {
		if err := c.Delete(t.Context(), &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("pod-%d", i)}}); err != nil {
			t.Fatal(err)
		}
	}
	testkit.MergePatch(t, c, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "pod-9"}}, "test", `{"metadata":{"labels":{"relabelled":"yes"}}}`)
	lw.expire()

	// The store holds what the API server holds, once the relist is over.
	err = wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		return relisted.Load() > 0 && !inf.Relisting() && maps.Equal(storeVersions(inf), apiVersions(t, c, ns)), nil
	})
	if err != nil {
		t.Fatalf("after the relist the store holds %v, want the API server's %v (relists ended: %d, relisting %v)",
			storeVersions(inf), apiVersions(t, c, ns), relisted.Load(), inf.Relisting())
	}
	if err := cc.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: "pod-0"}, metacache.NewObject(gvk)); !apierrors.IsNotFound(err) {
		t.Errorf("reading a deleted pod from the cache: %v, want not found", err)
	}
	if n := lw.watchLists.Load(); n < 2 {
		t.Errorf("%d watch-lists: want the first list and the relist streamed", n)
	}
	calls := rec.snapshot()
	for i := range 3 {
		key := fmt.Sprintf("%s/pod-%d", ns, i)
		if last := calls[key][len(calls[key])-1]; !strings.HasSuffix(last, "final state unknown") {
			t.Errorf("%s: calls %q, want it swept out with a DeletedFinalStateUnknown", key, calls[key])
		}
	}
	if last := calls[ns+"/pod-9"][len(calls[ns+"/pod-9"])-1]; !strings.HasPrefix(last, "update ") {
		t.Errorf("pod-9: calls %q, want an update by the relist", calls[ns+"/pod-9"])
	}
}

func cachedNames(t *testing.T, c cache.Cache, ns string) []string {
	t.Helper()
	list := metacache.NewList(corev1.SchemeGroupVersion.WithKind("Pod"))
	if err := c.List(t.Context(), list, client.InNamespace(ns), client.MatchingLabelsSelector{Selector: labels.Everything()}); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range list.Items {
		names = append(names, p.Name)
	}
	return names
}

func storeVersions(inf *informer.Informer) map[string]string { return contents(inf.GetStore()) }

func apiVersions(t *testing.T, c client.Client, ns string) map[string]string {
	t.Helper()
	list := metacache.NewList(corev1.SchemeGroupVersion.WithKind("Pod"))
	if err := c.List(t.Context(), list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, p := range list.Items {
		out[ns+"/"+p.Name] = p.ResourceVersion
	}
	return out
}

// cutOff passes a ListerWatcher through, except that once cut its watch
// drops every event (a connection that went quiet), and expire ends it with
// a 410, as after an etcd compaction.
type cutOff struct {
	in  toolscache.ListerWatcherWithContext
	cut atomic.Bool
	// watchLists counts the watch-lists asked for.
	watchLists atomic.Int32

	mu      sync.Mutex
	current chan struct{}
}

func (l *cutOff) ListWithContext(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
	return l.in.ListWithContext(ctx, o)
}

func (l *cutOff) WatchWithContext(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
	if o.SendInitialEvents != nil && *o.SendInitialEvents {
		l.watchLists.Add(1)
	}
	w, err := l.in.WatchWithContext(ctx, o)
	if err != nil {
		return nil, err
	}
	expire := make(chan struct{})
	l.mu.Lock()
	l.current = expire
	l.mu.Unlock()
	l.cut.Store(false) // a new watch (the relist's) hears everything
	out := make(chan watch.Event)
	stopped := make(chan struct{})
	var once sync.Once
	go func() {
		defer close(out)
		defer w.Stop()
		for {
			select {
			case <-stopped:
				return
			case <-expire:
				st := apierrors.NewResourceExpired("too old resource version").ErrStatus
				select {
				case out <- watch.Event{Type: watch.Error, Object: &st}:
				case <-stopped:
				}
				return
			case ev, ok := <-w.ResultChan():
				if !ok {
					return
				}
				if l.cut.Load() {
					continue
				}
				select {
				case out <- ev:
				case <-stopped:
					return
				}
			}
		}
	}()
	return watchFuncs{out: out, stop: func() { once.Do(func() { close(stopped) }) }}, nil
}

// expire ends the current watch with a 410.
func (l *cutOff) expire() {
	l.mu.Lock()
	defer l.mu.Unlock()
	close(l.current)
}

type watchFuncs struct {
	out  chan watch.Event
	stop func()
}

func (w watchFuncs) ResultChan() <-chan watch.Event { return w.out }
func (w watchFuncs) Stop()                          { w.stop() }
