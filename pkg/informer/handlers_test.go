package informer_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/metawatch/metawatch/pkg/informer"
)

// A handler added once the informer has synced is handed an add of every
// stored object first, and its registration syncs after them.
func TestLateHandlerGetsTheStoreFirst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api := newFakeAPI()
		pods(api, 3)
		inf, stop := run(t, api, informer.Options{QueueLength: 1})
		defer stop()
		settle(t, api, inf)
		rec := newRecorder()
		reg, err := inf.AddEventHandler(rec)
		if err != nil {
			t.Fatal(err)
		}
		<-reg.HasSyncedChecker().Done()
		api.set("ns", "p0", nil)
		settle(t, api, inf)
		synctest.Wait()
		wantCalls(t, rec, map[string][]string{
			"ns/p0": {"add 1 initial=true", "update 1->4"}, "ns/p1": {"add 2 initial=true"}, "ns/p2": {"add 3 initial=true"},
		})
	})
}

// gauge is a Backlog that remembers its highest value.
type gauge struct {
	mu       sync.Mutex
	now, max float64
}

func (g *gauge) Add(v float64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.now += v
	g.max = max(g.max, g.now)
}

func (g *gauge) values() (now, highest float64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.now, g.max
}

// A handler that does not keep up holds the stream back: its queue never
// holds more than its length, and the backlog says so.
func TestSlowHandlerHoldsBackTheStream(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api, backlog := newFakeAPI(), &gauge{}
		release := make(chan struct{})
		slow := toolscache.ResourceEventHandlerFuncs{UpdateFunc: func(any, any) { <-release }}
		inf, stop := run(t, api, informer.Options{QueueLength: 2, Backlog: backlog}, slow)
		defer stop()
		settle(t, api, inf)
		for i := range 10 {
			api.set("ns", "p0", map[string]string{"v": fmt.Sprint(i)})
		}
		synctest.Wait()
		// The update of rv 2 in the handler, 3 and 4 queued, the loop
		// waiting for room for 5.
		if now, _ := backlog.values(); now != 2 {
			t.Errorf("backlog %v, want the queue's length, 2", now)
		}
		if got := inf.LastSyncResourceVersion(); got != "4" {
			t.Errorf("the informer processed up to %q, want 4 (held back by the handler)", got)
		}
		close(release)
		settle(t, api, inf)
		synctest.Wait()
		// The gauge may read one more than the queue holds for a moment: a
		// notification queued as soon as the handler took one, before the
		// handler's goroutine counts it taken.
		if now, highest := backlog.values(); now != 0 || highest > 3 {
			t.Errorf("backlog %v, at most %v: want 0, at most 2 (+1)", now, highest)
		}
	})
}

// A removed handler is handed nothing more; ShutDownEventHandler waits for it.
func TestRemovedHandlerHearsNoMore(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api, rec := newFakeAPI(), newRecorder()
		pods(api, 1)
		inf, stop := run(t, api, informer.Options{})
		defer stop()
		reg, _ := inf.AddEventHandler(rec)
		settle(t, api, inf)
		synctest.Wait()
		if err := toolscache.ShutDownEventHandler(inf, reg); err != nil {
			t.Fatal(err)
		}
		api.set("ns", "p0", nil)
		settle(t, api, inf)
		synctest.Wait()
		wantCalls(t, rec, map[string][]string{"ns/p0": {"add 1 initial=true"}})
		if err := inf.RemoveEventHandler(reg); err != nil {
			t.Errorf("removing it twice: %v", err)
		}
	})
}

// Errors other than an expired resourceVersion are told to the watch error
// handler and tried again after a backoff; a watch resumes where it was.
func TestWatchErrorsAreToldAndRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api := newFakeAPI()
		pods(api, 1)
		forbidden := apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "", fmt.Errorf("no"))
		var mu sync.Mutex
		var told []string
		inf := informer.New(api.client(me), newPod(), 0, nil, informer.Options{})
		_ = inf.SetWatchErrorHandlerWithContext(func(_ context.Context, r *toolscache.Reflector, err error) {
			mu.Lock()
			defer mu.Unlock()
			told = append(told, fmt.Sprintf("%s: %v", r.Name(), apierrors.ReasonForError(err)))
		})
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() { inf.RunWithContext(ctx); close(done) }()
		defer func() { cancel(); <-done }()
		settle(t, api, inf)
		time.Sleep(2 * time.Second) // not a very short watch
		api.mu.Lock()
		api.fail[me] = []error{forbidden, forbidden}
		api.mu.Unlock()
		api.endWatches(false)
		api.set("ns", "p0", nil)
		settle(t, api, inf)
		mu.Lock()
		defer mu.Unlock()
		want := "streaming informer Pod: Forbidden"
		if len(told) != 2 || told[0] != want || told[1] != want {
			t.Errorf("told %q, want twice %q", told, want)
		}
		if reqs := api.requests; len(reqs) != 2 || reqs[1] != "watch rv=1" {
			t.Errorf("requests %q: want the watch resumed from 1, not a relist", reqs)
		}
	})
}

// A handler asking for resyncs is handed an update of every object to
// itself every period; the informer's store is not listed again.
func TestResync(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api, rec := newFakeAPI(), newRecorder()
		pods(api, 2)
		inf := informer.New(api.client(me), newPod(), 0, nil, informer.Options{})
		_, _ = inf.AddEventHandlerWithResyncPeriod(rec, time.Minute)
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() { inf.RunWithContext(ctx); close(done) }()
		defer func() { cancel(); <-done }()
		settle(t, api, inf)
		time.Sleep(time.Minute + time.Second)
		synctest.Wait()
		wantCalls(t, rec, map[string][]string{
			"ns/p0": {"add 1 initial=true", "update 1->1"}, "ns/p1": {"add 2 initial=true", "update 2->2"},
		})
	})
}
