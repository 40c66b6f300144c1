package informer_test

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
)

// fakeAPI is an API server of metadata objects for the tests: a resourceVersion
// counter, the objects, the history of their changes, and the watches open
// on it, each tagged with the client (informer) that opened it. It serves
// watch-lists (unless noWatchList), watches from a resourceVersion, and paged
// lists; the test scripts its faults.
type fakeAPI struct {
	mu        sync.Mutex
	rv        uint64
	objects   map[string]*metav1.PartialObjectMetadata
	history   []watch.Event
	compacted uint64 // a watch from before it gets a 410
	watches   []*fakeWatch
	// noWatchList answers a watch-list with an error, as a server without it.
	noWatchList bool
	// cut, per client, ends its next watch-list with a 410 after that many
	// initial events.
	cut map[string]int
	// pages are the snapshots of paged lists under way, by continue token.
	pages map[string][]*metav1.PartialObjectMetadata
	// opened counts the requests, per client and kind of request;
	// requests lists them with their resourceVersion.
	opened   map[string]int
	requests []string
	// timeouts are the timeoutSeconds of the watch-lists and the watches.
	timeouts map[string][]int64
	// fail answers the next watches of a client with these errors.
	fail map[string][]error
}

var podGVK = schema.GroupVersionKind{Version: "v1", Kind: "Pod"}

func newFakeAPI() *fakeAPI {
	return &fakeAPI{objects: map[string]*metav1.PartialObjectMetadata{}, cut: map[string]int{}, pages: map[string][]*metav1.PartialObjectMetadata{}, opened: map[string]int{}, fail: map[string][]error{}, timeouts: map[string][]int64{}}
}

// set creates or updates the object ns/name with labels.
func (f *fakeAPI) set(ns, name string, labels map[string]string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.setLocked(ns, name, labels)
}

func (f *fakeAPI) setLocked(ns, name string, labels map[string]string) {
	f.rv++
	key := ns + "/" + name
	obj := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels,
		UID: types.UID("uid-" + key), ResourceVersion: strconv.FormatUint(f.rv, 10)}}
	obj.SetGroupVersionKind(podGVK)
	ev := watch.Modified
	if _, ok := f.objects[key]; !ok {
		ev = watch.Added
	}
	f.objects[key] = obj
	f.record(watch.Event{Type: ev, Object: obj})
}

// remove deletes ns/name if it exists.
func (f *fakeAPI) remove(ns, name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	key := ns + "/" + name
	old, ok := f.objects[key]
	if !ok {
		return
	}
	f.rv++
	delete(f.objects, key)
	gone := old.DeepCopy()
	gone.ResourceVersion = strconv.FormatUint(f.rv, 10)
	f.record(watch.Event{Type: watch.Deleted, Object: gone})
}

// removeQuietly deletes ns/name as if its delete event had been compacted
// away: only a list tells it.
func (f *fakeAPI) removeQuietly(ns, name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.objects, ns+"/"+name)
}

// record appends ev to the history and sends it to the watches past their list.
func (f *fakeAPI) record(ev watch.Event) {
	f.history = append(f.history, ev)
	for _, w := range f.watches {
		w.send(copyEvent(ev))
	}
}

// currentRV is the resourceVersion of the last change.
func (f *fakeAPI) currentRV() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return strconv.FormatUint(f.rv, 10)
}

// sorted is every object, a copy each, by key.
func (f *fakeAPI) sorted() []*metav1.PartialObjectMetadata {
	keys := make([]string, 0, len(f.objects))
	for k := range f.objects {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	out := make([]*metav1.PartialObjectMetadata, 0, len(keys))
	for _, k := range keys {
		out = append(out, f.objects[k].DeepCopy())
	}
	return out
}

// client is the ListerWatcher of one informer.
func (f *fakeAPI) client(name string) toolscache.ListerWatcher {
	return &toolscache.ListWatch{
		ListWithContextFunc: func(_ context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return f.list(o)
		},
		WatchFuncWithContext: func(_ context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return f.watch(name, o)
		},
	}
}

// list serves a list, in pages of o.Limit if set, each page of the
// snapshot the first one took.
func (f *fakeAPI) list(o metav1.ListOptions) (runtime.Object, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.opened["list"]++
	f.requests = append(f.requests, fmt.Sprintf("list rv=%s limit=%d continue=%v", o.ResourceVersion, o.Limit, o.Continue != ""))
	items, rv := f.sorted(), strconv.FormatUint(f.rv, 10)
	if o.Continue != "" {
		snapshot, ok := f.pages[o.Continue]
		if !ok {
			return nil, apierrors.NewResourceExpired("the continue token expired")
		}
		delete(f.pages, o.Continue)
		items, rv = snapshot[1:], snapshot[0].ResourceVersion
	}
	list := &metav1.PartialObjectMetadataList{ListMeta: metav1.ListMeta{ResourceVersion: rv}}
	if o.Limit > 0 && int64(len(items)) > o.Limit {
		token := fmt.Sprintf("page-%d-%d", f.rv, len(f.pages)+len(f.history))
		marker := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{ResourceVersion: rv}}
		f.pages[token] = append([]*metav1.PartialObjectMetadata{marker}, items[o.Limit:]...)
		items, list.Continue = items[:o.Limit], token
	}
	for _, item := range items {
		list.Items = append(list.Items, *item)
	}
	return list, nil
}

// watch serves a watch-list (its initial events, then the bookmark that
// ends them) or a watch from a resourceVersion.
func (f *fakeAPI) watch(client string, o metav1.ListOptions) (watch.Interface, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if errs := f.fail[client]; len(errs) > 0 {
		f.fail[client] = errs[1:]
		return nil, errs[0]
	}
	if o.SendInitialEvents != nil && *o.SendInitialEvents {
		f.opened[client+" watch-list"]++
		f.requests = append(f.requests, "watch-list rv="+o.ResourceVersion)
		f.timeouts["watch-list"] = append(f.timeouts["watch-list"], ptr.Deref(o.TimeoutSeconds, 0))
		if f.noWatchList {
			return nil, apierrors.NewInvalid(schema.GroupKind{Kind: "ListOptions"}, "", nil)
		}
		if from, err := strconv.ParseUint(o.ResourceVersion, 10, 64); err == nil && from < f.compacted {
			return nil, apierrors.NewResourceExpired("too old resource version")
		}
		w := newFakeWatch(client)
		f.startWatchList(client, w)
		return w, nil
	}
	f.opened[client+" watch"]++
	f.requests = append(f.requests, "watch rv="+o.ResourceVersion)
	f.timeouts["watch"] = append(f.timeouts["watch"], ptr.Deref(o.TimeoutSeconds, 0))
	from, err := strconv.ParseUint(o.ResourceVersion, 10, 64)
	if err != nil {
		return nil, apierrors.NewBadRequest("a watch needs a resourceVersion here")
	}
	w := newFakeWatch(client)
	if from < f.compacted {
		w.send(watch.Event{Type: watch.Error, Object: expiredStatus()})
		w.end()
		return w, nil
	}
	for _, ev := range f.history {
		if resourceVersion(ev.Object) > from {
			w.send(copyEvent(ev))
		}
	}
	f.watches = append(f.watches, w)
	return w, nil
}

// startWatchList queues the initial events of a watch-list on w, cut short
// by a 410 if the client's next list is to be.
func (f *fakeAPI) startWatchList(client string, w *fakeWatch) {
	n, cut := f.cut[client]
	delete(f.cut, client)
	for i, obj := range f.sorted() {
		if cut && i == n {
			w.send(watch.Event{Type: watch.Error, Object: expiredStatus()})
			w.end()
			return
		}
		w.send(watch.Event{Type: watch.Added, Object: obj})
	}
	if cut {
		w.send(watch.Event{Type: watch.Error, Object: expiredStatus()})
		w.end()
		return
	}
	end := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{ResourceVersion: strconv.FormatUint(f.rv, 10),
		Annotations: map[string]string{metav1.InitialEventsAnnotationKey: "true"}}}
	end.SetGroupVersionKind(podGVK)
	w.send(watch.Event{Type: watch.Bookmark, Object: end})
	f.watches = append(f.watches, w)
}

// bookmark sends a bookmark at the current resourceVersion to every watch.
func (f *fakeAPI) bookmark() {
	f.mu.Lock()
	defer f.mu.Unlock()
	b := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{ResourceVersion: strconv.FormatUint(f.rv, 10)}}
	b.SetGroupVersionKind(podGVK)
	for _, w := range f.watches {
		w.send(watch.Event{Type: watch.Bookmark, Object: b.DeepCopy()})
	}
}

// endWatches ends every open watch, with a 410 first if expire.
func (f *fakeAPI) endWatches(expire bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.endWatchesLocked(expire)
}

func (f *fakeAPI) endWatchesLocked(expire bool) {
	for _, w := range f.watches {
		if expire {
			w.send(watch.Event{Type: watch.Error, Object: expiredStatus()})
		}
		w.end()
	}
	f.watches = nil
}

// compact forgets the history: a watch from before now gets a 410.
func (f *fakeAPI) compact() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.compacted, f.history = f.rv, nil
}

// restart ends every watch, changes ns/name meanwhile and forgets the
// history, at once: every watch from before gets a 410.
func (f *fakeAPI) restart(ns, name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.endWatchesLocked(false)
	f.setLocked(ns, name, map[string]string{"restart": "yes"})
	f.compacted, f.history = f.rv, nil
}

// caughtUp reports whether client has a watch open that has handed out
// everything it was sent.
func (f *fakeAPI) caughtUp(client string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, w := range f.watches {
		if w.client == client && w.drained() {
			return true
		}
	}
	return false
}

func expiredStatus() *metav1.Status {
	st := apierrors.NewResourceExpired("too old resource version").ErrStatus
	return &st
}

func resourceVersion(obj runtime.Object) uint64 {
	m, err := apimeta.Accessor(obj)
	if err != nil {
		return 0
	}
	rv, _ := strconv.ParseUint(m.GetResourceVersion(), 10, 64)
	return rv
}

func copyEvent(ev watch.Event) watch.Event {
	return watch.Event{Type: ev.Type, Object: ev.Object.DeepCopyObject()}
}

// fakeWatch is one watch: the events sent to it, handed out in order by its
// own goroutine.
type fakeWatch struct {
	client  string
	out     chan watch.Event
	wake    chan struct{}
	stopped chan struct{}
	stop    sync.Once

	mu      sync.Mutex
	pending []watch.Event
	ended   bool // no more events: out closes once pending is handed out
	busy    bool // the goroutine holds an event it has not handed out yet
}

func newFakeWatch(client string) *fakeWatch {
	w := &fakeWatch{client: client, out: make(chan watch.Event), wake: make(chan struct{}, 1), stopped: make(chan struct{})}
	go w.pump()
	return w
}

func (w *fakeWatch) ResultChan() <-chan watch.Event { return w.out }
func (w *fakeWatch) Stop()                          { w.stop.Do(func() { close(w.stopped) }) }

func (w *fakeWatch) send(ev watch.Event) {
	w.mu.Lock()
	if !w.ended {
		w.pending = append(w.pending, ev)
	}
	w.mu.Unlock()
	w.poke()
}

func (w *fakeWatch) end() {
	w.mu.Lock()
	w.ended = true
	w.mu.Unlock()
	w.poke()
}

func (w *fakeWatch) poke() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// drained: open, and everything sent was handed out.
func (w *fakeWatch) drained() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	select {
	case <-w.stopped:
		return false
	default:
	}
	return !w.ended && len(w.pending) == 0 && !w.busy
}

func (w *fakeWatch) pump() {
	defer close(w.out)
	for {
		w.mu.Lock()
		if len(w.pending) == 0 {
			ended := w.ended
			w.mu.Unlock()
			if ended {
				return
			}
			select {
			case <-w.wake:
				continue
			case <-w.stopped:
				return
			}
		}
		ev := w.pending[0]
		w.pending, w.busy = w.pending[1:], true
		w.mu.Unlock()
		select {
		case w.out <- ev:
		case <-w.stopped:
			return
		}
		w.mu.Lock()
		w.busy = false
		w.mu.Unlock()
	}
}
