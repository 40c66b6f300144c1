package sharding_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"path"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/metawatch/metawatch/pkg/metacache"
	"github.com/metawatch/metawatch/pkg/metamanager"
	"github.com/metawatch/metawatch/pkg/sharding"
	"github.com/metawatch/metawatch/pkg/telemetry"
	"github.com/metawatch/metawatch/pkg/testing/cachekit"
	"github.com/metawatch/metawatch/pkg/testing/controlplane"
	"github.com/metawatch/metawatch/pkg/testing/testkit"
)

// A sharded cache follows its buckets as they move, in place, while pods are
// created, relabelled and deleted all along: after each of a dozen random
// moves (buckets coming, going, all, none) it holds exactly the API server's
// pods of its buckets, each at the server's resourceVersion (no pod of a
// bucket that went stays behind, none is missing or old); no pod's version
// ever went back in an update; and the pods and the Namespaces were each
// listed once, at the start: a move lists only the buckets that came.
func TestShardedCachesMoveInPlace(t *testing.T) {
	controlplane.SkipIfShort(t)
	cp := sharding.ControlPlane()
	for name, serverSide := range map[string]bool{"server-side": true, "client-side": false} {
		t.Run(name, func(t *testing.T) {
			if serverSide {
				controlplane.RequireShardedListAndWatch(t)
			}
			ns := "moves-" + name
			c := testkit.Client(t, cp.Config)
			watches := namespaceOfPods(t, c, ns, 60)
			cover := sharding.NewCoverage(sharding.Range(0, 32))
			var rec testkit.Recorder
			mgr := cachekit.StartEngineWith(t, rec.Wrap(cp.Config), watches, metamanager.Options{MetricsBindAddress: "0",
				ShardFilter: &metacache.ShardFilter{Cover: cover, ServerSide: serverSide}})
			backwards := watchVersions(t, mgr)
			inPlace, relisted := movesSoFar()

			churn := startPodChurn(t.Context(), c, ns)
			random := rand.New(rand.NewPCG(7, uint64(len(name))))
			moves := 12
			for i := range moves {
				next := randomBuckets(random, i)
				churn.run(true)
				cover.Set(next)
				time.Sleep(time.Duration(100+random.IntN(300)) * time.Millisecond) // the move runs amid the churn
				churn.run(false)
				waitCacheHolds(t, c, mgr.GetCache(), ns, next, fmt.Sprintf("move %d to %d buckets", i+1, len(next)))
			}
			churn.stop()

			if got := backwards(); len(got) > 0 {
				t.Errorf("the cache's versions went back: %v", got)
			}
			inPlaceNow, relistedNow := movesSoFar()
			// Two informers follow the cover: the pods' and nothing else (Namespaces are not sharded).
			if inPlaceNow-inPlace != float64(moves) || relistedNow != relisted {
				t.Errorf("moves in place %v, relists %v; want %d in place (one per move of the one sharded informer) and no relist",
					inPlaceNow-inPlace, relistedNow-relisted, moves)
			}
			full, partial := listsOf(rec.All())
			if full["pods"] != 1 || full["namespaces"] != 1 {
				t.Errorf("full lists %v, want 1 of pods and 1 of namespaces: moves must list only the buckets that came", full)
			}
			t.Logf("%d moves amid churn: full lists %v, lists of the buckets that came %v", moves, full, partial)
		})
	}
}

// randomBuckets is the i-th cover of the test: some empty and full ones, the
// others random sets.
func randomBuckets(r *rand.Rand, i int) []sharding.Bucket {
	switch i {
	case 3:
		return nil
	case 4:
		return sharding.Range(0, sharding.Buckets)
	}
	var out []sharding.Bucket
	for b := range sharding.Bucket(sharding.Buckets) {
		if r.IntN(2) == 0 {
			out = append(out, b)
		}
	}
	return out
}

func movesSoFar() (inPlace, relisted float64) {
	return testutil.ToFloat64(telemetry.ShardCacheMoves.WithLabelValues(telemetry.MoveInPlace)),
		testutil.ToFloat64(telemetry.ShardCacheMoves.WithLabelValues(telemetry.MoveRelisted))
}

// listsOf counts, per resource, the full lists (a LIST, or a watch that sends
// initial events) and the lists at an exact resourceVersion (a move's).
func listsOf(requests []testkit.Request) (full, partial map[string]int) {
	full, partial = map[string]int{}, map[string]int{}
	for _, r := range requests {
		resource := path.Base(r.Path)
		if r.Method != http.MethodGet || r.Query.Get("limit") == "1" {
			continue
		}
		switch {
		case r.Query.Get("resourceVersionMatch") == string(metav1.ResourceVersionMatchExact) || r.Query.Get("continue") != "":
			partial[resource]++
		case r.Query.Get("watch") == "" || r.Query.Get("sendInitialEvents") == "true":
			full[resource]++
		}
	}
	return full, partial
}

// waitCacheHolds waits until the cache holds exactly the pods of ns in
// buckets, each at the API server's resourceVersion.
func waitCacheHolds(t *testing.T, c client.Client, cache client.Reader, ns string, buckets []sharding.Bucket, what string) {
	t.Helper()
	in := map[sharding.Bucket]bool{}
	for _, b := range buckets {
		in[b] = true
	}
	var server, cached map[string]string
	ok := waitUntil(testkit.Timeout, func() bool {
		var pods corev1.PodList
		if err := c.List(t.Context(), &pods, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		server = map[string]string{}
		for _, p := range pods.Items {
			if in[sharding.BucketOf(p.UID)] {
				server[p.Name] = p.ResourceVersion
			}
		}
		list := metacache.NewList(corev1.SchemeGroupVersion.WithKind("Pod"))
		if err := cache.List(t.Context(), list, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		cached = map[string]string{}
		for _, p := range list.Items {
			cached[p.Name] = p.ResourceVersion
		}
		return fmt.Sprint(server) == fmt.Sprint(cached)
	})
	if !ok {
		t.Fatalf("%s: the cache holds %d pods, the server has %d in those buckets; differing: %v", what, len(cached), len(server), differing(server, cached))
	}
}

func differing(want, got map[string]string) []string {
	var out []string
	for k, v := range want {
		if got[k] != v {
			out = append(out, fmt.Sprintf("%s: cached %q, server %q", k, got[k], v))
		}
	}
	for k, v := range got {
		if _, ok := want[k]; !ok {
			out = append(out, fmt.Sprintf("%s: cached %q, not in the buckets on the server", k, v))
		}
	}
	return out
}

func waitUntil(timeout time.Duration, cond func() bool) bool {
	for deadline := time.Now().Add(timeout); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if cond() {
			return true
		}
	}
	return cond()
}

// watchVersions records, from the pods informer's update events, any pod
// whose resourceVersion went back; it returns what it saw so far.
func watchVersions(t *testing.T, mgr manager.Manager) func() []string {
	t.Helper()
	informer, err := mgr.GetCache().GetInformer(t.Context(), metacache.NewObject(corev1.SchemeGroupVersion.WithKind("Pod")))
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var back []string
	_, err = informer.AddEventHandler(toolscache.ResourceEventHandlerFuncs{UpdateFunc: func(oldObj, newObj any) {
		before, after := oldObj.(metav1.Object), newObj.(metav1.Object) // stored packed: the interface, not the type
		if version(after.GetResourceVersion()) < version(before.GetResourceVersion()) {
			mu.Lock()
			back = append(back, fmt.Sprintf("%s from %s to %s", after.GetName(), before.GetResourceVersion(), after.GetResourceVersion()))
			mu.Unlock()
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(back)
	}
}

func version(rv string) uint64 {
	n, _ := strconv.ParseUint(rv, 10, 64)
	return n
}

// podChurn creates, relabels and deletes pods of a namespace while running.
type podChurn struct {
	running atomic.Bool
	step    sync.Mutex // held while a step is under way
	done    chan struct{}
	ended   sync.WaitGroup
}

func startPodChurn(ctx context.Context, c client.Client, ns string) *podChurn {
	ch := &podChurn{done: make(chan struct{})}
	ch.ended.Add(1)
	go func() {
		defer ch.ended.Done()
		for n := 0; ; n++ {
			select {
			case <-ch.done:
				return
			case <-time.After(15 * time.Millisecond):
			}
			ch.step.Lock()
			ch.churnOnce(ctx, c, ns, n)
			ch.step.Unlock()
		}
	}()
	return ch
}

// churnOnce is step n of the churn, if it is running.
func (ch *podChurn) churnOnce(ctx context.Context, c client.Client, ns string, n int) {
	if !ch.running.Load() {
		return
	}
	var pods corev1.PodList
	if err := c.List(ctx, &pods, client.InNamespace(ns)); err != nil || len(pods.Items) == 0 {
		return
	}
	some := &pods.Items[n%len(pods.Items)]
	switch n % 3 {
	case 0:
		_ = c.Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("churn-%04d", n)},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: testkit.PodImage}}}})
	case 1:
		_ = c.Patch(ctx, some, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"churn":"`+strconv.Itoa(n)+`"}}}`)))
	case 2:
		_ = c.Delete(ctx, some, client.GracePeriodSeconds(0))
	}
}

// run starts or pauses the churn; a pause waits out a step under way.
func (ch *podChurn) run(on bool) {
	ch.step.Lock()
	defer ch.step.Unlock()
	ch.running.Store(on)
}

func (ch *podChurn) stop() {
	close(ch.done)
	ch.ended.Wait()
}
