package informer_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	toolscache "k8s.io/client-go/tools/cache"

	"github.com/metawatch/metawatch/pkg/informer"
)

const stock = "stock"

// FuzzStreamingMatchesStock drives the same sequence of operations on a fake
// API server (adds, updates and deletes of objects, some of them lost to a
// compaction; bookmarks; watches that end, or end with a 410; relists cut
// short by a 410; an API server restarted with its history gone; watch-list
// support going and coming, so that relists are paged lists) through
// client-go's informer and the streaming one, each with a handler added
// before it runs and one added later, and checks at every quiescent point
// (both informers synced, caught up with the API server, their handlers
// idle) that their stores hold the same objects at the same
// resourceVersions, and that each handler was called the same way for each
// object: the same adds (isInInitialList included), updates (old and new
// resourceVersions) and deletes (tombstone or not), in the same order.
// Time is synctest's: backoffs take none.
func FuzzStreamingMatchesStock(f *testing.F) {
	f.Add([]byte{3, 0, 1, 1, 2, 6, 0, 3, 1})
	f.Add([]byte{5, 7, 2, 0, 9, 6, 0, 9, 1})
	f.Add([]byte{4, 3, 0x81, 6, 0, 8, 2, 4, 0, 5, 0})
	f.Add([]byte{6, 9, 0, 7, 3, 0, 4, 3, 0x82, 8, 0, 7, 0, 9, 1, 6, 1})
	f.Add([]byte{2, 7, 1, 9, 0, 0, 5, 1, 6, 6, 0, 8, 1, 2, 5})
	f.Fuzz(func(t *testing.T, ops []byte) {
		if len(ops) > 64 {
			ops = ops[:64]
		}
		synctest.Test(t, func(t *testing.T) { differential(t, ops) })
	})
}

// pair is the two informers under test, their handlers and the API server.
type pair struct {
	api       *fakeAPI
	informers map[string]toolscache.SharedIndexInformer
	early     map[string]*recorder
	late      map[string]*recorder
}

func differential(t *testing.T, ops []byte) {
	p := &pair{api: newFakeAPI(), early: map[string]*recorder{}, late: map[string]*recorder{}}
	// Never "0", which client-go's informer takes for "any", and
	// watches from without taking its resourceVersion from the events.
	p.api.rv = 10
	if len(ops) > 0 {
		pods(p.api, int(ops[0]%6))
		ops = ops[1:]
	}
	indexers := toolscache.Indexers{toolscache.NamespaceIndex: toolscache.MetaNamespaceIndexFunc}
	p.informers = map[string]toolscache.SharedIndexInformer{
		stock: toolscache.NewSharedIndexInformer(p.api.client(stock), newPod(), 0, indexers),
		me:    informer.New(p.api.client(me), newPod(), 0, indexers, informer.Options{PageSize: 2, QueueLength: 2}),
	}
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	for name, inf := range p.informers {
		_ = inf.SetTransform(markSome)
		p.early[name] = newRecorder()
		if _, err := inf.AddEventHandler(p.early[name]); err != nil {
			t.Fatal(err)
		}
		wg.Go(func() { inf.RunWithContext(ctx) })
	}
	defer func() { cancel(); wg.Wait() }()
	p.check(t, "the first list")
	for len(ops) >= 2 {
		what := p.apply(t, ops[0], ops[1])
		ops = ops[2:]
		p.check(t, what)
	}
}

// apply applies one operation, and says what it was.
func (p *pair) apply(t *testing.T, op, arg byte) string {
	ns, name := "ns", fmt.Sprintf("p%d", arg%8)
	if arg&0x40 != 0 {
		ns = "other" // so that sweeps go a namespace at a time
	}
	switch op % 10 {
	case 0, 1, 2:
		p.api.set(ns, name, map[string]string{"v": fmt.Sprint(arg >> 3)})
		return "set " + ns + "/" + name
	case 3:
		if arg&0x80 != 0 {
			p.api.removeQuietly(ns, name)
			return "delete " + ns + "/" + name + ", the event lost"
		}
		p.api.remove(ns, name)
		return "delete " + ns + "/" + name
	case 4:
		p.api.bookmark()
		return "a bookmark"
	case 5:
		time.Sleep(2 * time.Second) // not a very short watch, which client-go relists after
		p.api.endWatches(false)
		return "the watches end"
	case 6:
		p.api.endWatches(true)
		return "a 410 mid-stream"
	case 7:
		p.api.mu.Lock()
		p.api.cut[stock], p.api.cut[me] = int(arg%5), int(arg%5)
		p.api.mu.Unlock()
		p.api.endWatches(true)
		return fmt.Sprintf("a 410, then a relist cut after %d objects", arg%5)
	case 8:
		time.Sleep(2 * time.Second)
		p.api.restart(ns, name)
		return "the API server restarts, its history gone"
	default:
		p.api.mu.Lock()
		p.api.noWatchList = !p.api.noWatchList
		p.api.mu.Unlock()
		if arg&1 != 0 && len(p.late) == 0 {
			p.addLate(t)
			return "watch-list toggled, late handlers added"
		}
		return "watch-list toggled"
	}
}

func (p *pair) addLate(t *testing.T) {
	for name, inf := range p.informers {
		p.late[name] = newRecorder()
		reg, err := inf.AddEventHandler(p.late[name])
		if err != nil {
			t.Fatal(err)
		}
		<-reg.HasSyncedChecker().Done()
	}
}

// check waits for both informers to settle, and compares them.
func (p *pair) check(t *testing.T, after string) {
	t.Helper()
	settled(t, p.api, p.informers)
	synctest.Wait() // the handlers are idle
	stockStore, myStore := contents(p.informers[stock].GetStore()), contents(p.informers[me].GetStore())
	if !maps.Equal(stockStore, myStore) {
		t.Fatalf("after %s: stores differ:\nclient-go's: %v\nstreaming:   %v", after, stockStore, myStore)
	}
	for _, handlers := range []map[string]*recorder{p.early, p.late} {
		if len(handlers) == 0 {
			continue
		}
		want, got := handlers[stock].snapshot(), handlers[me].snapshot()
		for _, k := range slices.Sorted(maps.Keys(want)) {
			if !slices.Equal(want[k], got[k]) {
				t.Fatalf("after %s: %s's calls differ:\nclient-go's: %q\nstreaming:   %q\nall of client-go's:\n%sall of the streaming one's:\n%s",
					after, k, want[k], got[k], handlers[stock], handlers[me])
			}
		}
		if len(want) != len(got) {
			t.Fatalf("after %s: calls for other objects:\nclient-go's:\n%sstreaming:\n%s", after, handlers[stock], handlers[me])
		}
	}
}
