package informer_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"testing"
	"testing/synctest"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/metawatch/metawatch/pkg/informer"
)

const me = "streaming"

// run starts a streaming informer of api's pods, with handlers added
// before it runs, and returns it and its stop (which waits for it).
func run(t *testing.T, api *fakeAPI, opts informer.Options, handlers ...toolscache.ResourceEventHandler) (*informer.Informer, func()) {
	t.Helper()
	inf := informer.New(api.client(me), &metav1.PartialObjectMetadata{}, 0,
		toolscache.Indexers{toolscache.NamespaceIndex: toolscache.MetaNamespaceIndexFunc}, opts)
	if err := inf.SetTransform(markSome); err != nil {
		t.Fatal(err)
	}
	for _, h := range handlers {
		if _, err := inf.AddEventHandler(h); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { inf.RunWithContext(ctx); close(done) }()
	return inf, func() { cancel(); <-done }
}

func settle(t *testing.T, api *fakeAPI, inf *informer.Informer) {
	t.Helper()
	settled(t, api, map[string]toolscache.SharedIndexInformer{me: inf})
}

func pods(api *fakeAPI, n int) {
	for i := range n {
		api.set("ns", fmt.Sprintf("p%d", i), map[string]string{"v": "0"})
	}
}

func wantCalls(t *testing.T, rec *recorder, want map[string][]string) {
	t.Helper()
	got := rec.snapshot()
	for _, k := range slices.Sorted(maps.Keys(want)) {
		if !slices.Equal(got[k], want[k]) {
			t.Errorf("%s: got calls %q, want %q", k, got[k], want[k])
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("%s: unexpected calls %q", k, got[k])
		}
	}
}

func wantStore(t *testing.T, inf *informer.Informer, want map[string]string) {
	t.Helper()
	if got := contents(inf.GetStore()); !maps.Equal(got, want) {
		t.Errorf("store holds %v, want %v", got, want)
	}
}

// The first list is a watch-list streamed into the store; its stream goes on
// as the watch, and each change reaches the store and the handlers.
func TestWatchListThenWatch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api, rec := newFakeAPI(), newRecorder()
		pods(api, 3)
		inf, stop := run(t, api, informer.Options{}, rec)
		defer stop()
		settle(t, api, inf)
		wantStore(t, inf, map[string]string{"ns/p0": "1", "ns/p1": "2", "ns/p2": "3"})
		api.set("ns", "p1", map[string]string{"v": "1"})
		api.remove("ns", "p2")
		api.bookmark()
		settle(t, api, inf)
		wantStore(t, inf, map[string]string{"ns/p0": "1", "ns/p1": "4"})
		wantCalls(t, rec, map[string][]string{
			"ns/p0": {"add 1 initial=true"},
			"ns/p1": {"add 2 initial=true", "update 2->4"},
			"ns/p2": {"add 3 initial=true", "delete 5"},
		})
		if got := inf.GetStore().(*informer.Store).LastStoreSyncResourceVersion(); got != "5" {
			t.Errorf("the store says it processed up to %q, want the bookmark's 5", got)
		}
		if n := api.opened[me+" watch-list"] + api.opened[me+" watch"] + api.opened["list"]; n != 1 {
			t.Errorf("%d requests (%v), want the one watch-list", n, api.requests)
		}
	})
}

// A watch-list asks for an hour or two, a watch for 5 to 10 minutes: the
// initial events of a million objects from a busy API server take longer
// than a watch's timeout, and a list cut by it begins again from nothing.
func TestAWatchListHasTimeToStreamAMillionObjects(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api := newFakeAPI()
		pods(api, 3)
		inf, stop := run(t, api, informer.Options{}, newRecorder())
		defer stop()
		settle(t, api, inf)
		api.endWatches(false) // a watch from the last resourceVersion
		settle(t, api, inf)
		api.endWatches(true) // a 410: a relist, another watch-list
		settle(t, api, inf)
		api.mu.Lock()
		defer api.mu.Unlock()
		for kind, least := range map[string]int64{"watch-list": 3600, "watch": 300} {
			for _, s := range api.timeouts[kind] {
				if s < least || s > 2*least {
					t.Errorf("a %s asked for a timeout of %d s, want %d to %d", kind, s, least, 2*least)
				}
			}
		}
		if len(api.timeouts["watch-list"]) < 2 || len(api.timeouts["watch"]) == 0 {
			t.Errorf("requests %v, want two watch-lists and a watch", api.requests)
		}
	})
}

// A relist (the watch expired) stores over what the informer holds, and
// sweeps what it did not bring, marked or not, with a delete of a
// DeletedFinalStateUnknown; Relisting is true meanwhile, and the relist's
// end is told.
func TestRelistSweepsWhatItDidNotBring(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api, rec := newFakeAPI(), newRecorder()
		pods(api, 4)
		inf, stop := run(t, api, informer.Options{}, rec)
		defer stop()
		relisted := 0
		inf.OnRelisted(func() {
			if inf.Relisting() {
				t.Error("Relisting is still true when the relist's end is told")
			}
			relisted++
		})
		settle(t, api, inf)
		if inf.Relisting() {
			t.Error("Relisting is true after the first sync")
		}
		api.removeQuietly("ns", "p1") // not Marked
		api.removeQuietly("ns", "p2") // Marked
		api.endWatches(true)
		settle(t, api, inf)
		wantStore(t, inf, map[string]string{"ns/p0": "1", "ns/p3": "4"})
		wantCalls(t, rec, map[string][]string{
			"ns/p0": {"add 1 initial=true", "update 1->1"},
			"ns/p1": {"add 2 initial=true", "delete 2 final state unknown"},
			"ns/p2": {"add 3 initial=true", "delete 3 final state unknown"},
			"ns/p3": {"add 4 initial=true", "update 4->4"},
		})
		if relisted != 1 || inf.Relisting() {
			t.Errorf("relist ends told %d times, Relisting %v: want once, false", relisted, inf.Relisting())
		}
	})
}

// A list cut short is tried again; the handlers hear of each object once.
func TestListCutShortTellsEachObjectOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		for _, relist := range []bool{false, true} {
			api, rec := newFakeAPI(), newRecorder()
			pods(api, 5)
			if !relist {
				api.cut[me] = 3
			}
			inf, stop := run(t, api, informer.Options{}, rec)
			settle(t, api, inf)
			want := map[string][]string{}
			for i := range 5 {
				want[fmt.Sprintf("ns/p%d", i)] = []string{fmt.Sprintf("add %d initial=true", i+1)}
			}
			if relist {
				api.cut[me] = 3
				api.endWatches(true)
				settle(t, api, inf)
				for i := range 5 {
					want[fmt.Sprintf("ns/p%d", i)] = append(want[fmt.Sprintf("ns/p%d", i)], fmt.Sprintf("update %d->%d", i+1, i+1))
				}
			}
			wantCalls(t, rec, want)
			if got := api.opened[me+" watch-list"]; got != 2+btoi(relist) {
				t.Errorf("relist %v: %d watch-lists (%v), want the cut one tried again", relist, got, api.requests)
			}
			stop()
		}
	})
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// A relist from a resourceVersion the API server no longer has (410) is
// tried again at once from the most recent state.
func TestExpiredResourceVersionRelistsFromNow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api, rec := newFakeAPI(), newRecorder()
		pods(api, 2)
		inf, stop := run(t, api, informer.Options{}, rec)
		defer stop()
		settle(t, api, inf)
		api.endWatches(false)
		api.set("ns", "p0", map[string]string{"v": "1"}) // rv 3, while nothing watches
		api.compact()
		settle(t, api, inf)
		wantStore(t, inf, map[string]string{"ns/p0": "3", "ns/p1": "2"})
		want := []string{"watch-list rv=", "watch rv=2", "watch-list rv=2", "watch-list rv="}
		if !slices.Equal(api.requests, want) {
			t.Errorf("requests %q, want %q", api.requests, want)
		}
		wantCalls(t, rec, map[string][]string{
			"ns/p0": {"add 1 initial=true", "update 1->3"},
			"ns/p1": {"add 2 initial=true", "update 2->2"},
		})
	})
}

// Without watch-lists, the list is paged, each page stored before the next
// is asked for, then watched from the list's resourceVersion.
func TestPagedListWhereThereIsNoWatchList(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api, rec := newFakeAPI(), newRecorder()
		pods(api, 5)
		api.noWatchList = true
		inf, stop := run(t, api, informer.Options{PageSize: 2}, rec)
		defer stop()
		settle(t, api, inf)
		api.set("ns", "p9", nil)
		settle(t, api, inf)
		wantStore(t, inf, map[string]string{"ns/p0": "1", "ns/p1": "2", "ns/p2": "3", "ns/p3": "4", "ns/p4": "5", "ns/p9": "6"})
		want := []string{"watch-list rv=", "list rv= limit=2 continue=false", "list rv= limit=2 continue=true", "list rv= limit=2 continue=true", "watch rv=5"}
		if !slices.Equal(api.requests, want) {
			t.Errorf("requests %q, want %q", api.requests, want)
		}
		if got := rec.snapshot()["ns/p4"]; !slices.Equal(got, []string{"add 5 initial=true"}) {
			t.Errorf("p4's calls %q", got)
		}
	})
}

// A paged list whose continue token expired starts again.
func TestPagedListStartsAgainWhenItsTokenExpires(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api := newFakeAPI()
		pods(api, 3)
		api.noWatchList = true
		lw := api.client(me).(*toolscache.ListWatch)
		list := lw.ListWithContextFunc
		expireOnce := true
		lw.ListWithContextFunc = func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			if o.Continue != "" && expireOnce {
				expireOnce = false
				api.mu.Lock()
				clear(api.pages)
				api.mu.Unlock()
			}
			return list(ctx, o)
		}
		rec := newRecorder()
		inf := informer.New(lw, &metav1.PartialObjectMetadata{}, 0, nil, informer.Options{PageSize: 2})
		_, _ = inf.AddEventHandler(rec)
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() { inf.RunWithContext(ctx); close(done) }()
		settle(t, api, inf)
		wantStore(t, inf, map[string]string{"ns/p0": "1", "ns/p1": "2", "ns/p2": "3"})
		wantCalls(t, rec, map[string][]string{"ns/p0": {"add 1 initial=true"}, "ns/p1": {"add 2 initial=true"}, "ns/p2": {"add 3 initial=true"}})
		cancel()
		<-done
	})
}
