package informer

import (
	"context"
	"fmt"
	"reflect"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/watchlist"
	"k8s.io/klog/v2"
)

// DefaultQueueLength is how many notifications a handler's queue holds.
const DefaultQueueLength = 1024

// Options are what a caller may change; the zero value is client-go's
// reflector's behaviour with DefaultQueueLength.
type Options struct {
	// QueueLength bounds each handler's queue; 0: DefaultQueueLength.
	QueueLength int
	// Backlog, if not nil, is added the notifications queued for the
	// handlers and subtracted those taken (a Prometheus gauge).
	Backlog interface{ Add(float64) }
	// Backoff paces retries after errors; nil: client-go's reflector's.
	Backoff *wait.Backoff
	// PageSize is the limit of each page of the paged list; 0: 500.
	PageSize int64
	// Lists, if not nil, is told when a list attempt begins to receive
	// objects and when it ends (whatever ends it), and around a late
	// handler being handed the store: the process's GC is paced tighter
	// meanwhile (memlimit.Lists).
	Lists interface {
		Begin()
		End()
	}
}

// Informer is a toolscache.SharedIndexInformer that streams lists into its
// store (see the package doc).
type Informer struct {
	lw       toolscache.ListerWatcherWithContext
	objType  runtime.Object
	expected reflect.Type
	name     string
	opts     Options
	store    *Store
	// reflector only names the informer to the watch error handler, whose
	// signature wants one; it never runs.
	reflector *toolscache.Reflector
	// clientHasNoWatchList: lw says it cannot serve watch-lists (fake clients).
	clientHasNoWatchList bool

	// mu guards the settings that are fixed at Run, and started, stopped.
	mu               sync.Mutex
	started, stopped bool
	transform        toolscache.TransformFunc
	onWatchError     toolscache.WatchErrorHandlerWithContext
	defaultResync    time.Duration
	resyncCheck      time.Duration

	// emit orders what changes the store and who hears of it: the loop's
	// events, a late handler's initial adds, handlers coming and going.
	emit     sync.Mutex
	handlers []*registration
	marks    marks
	// stopping closes when Run ends: the handlers' goroutines stop, a
	// notification waiting for room is dropped.
	stopping          chan struct{}
	handlerGoroutines sync.WaitGroup

	synced     chan struct{}
	relisting  atomic.Bool
	relistedMu sync.Mutex
	relisted   map[int]func()
	nextID     int

	rvMu   sync.Mutex
	lastRV string
}

var _ toolscache.SharedIndexInformer = &Informer{}

// New is the informer of objType's objects that lw lists and watches, its
// store indexed by indexers; handlers that ask for no resync period get
// resync (0: none). Its signature, without opts, is
// cache.Options.NewInformer's.
func New(lw toolscache.ListerWatcher, objType runtime.Object, resync time.Duration, indexers toolscache.Indexers, opts Options) *Informer {
	if opts.QueueLength <= 0 {
		opts.QueueLength = DefaultQueueLength
	}
	if opts.PageSize <= 0 {
		opts.PageSize = 500
	}
	name := fmt.Sprintf("%T", objType)
	if gvk := objType.GetObjectKind().GroupVersionKind(); !gvk.Empty() {
		name = gvk.GroupKind().String()
	}
	return &Informer{
		lw: toolscache.ToListerWatcherWithContext(lw), objType: objType, expected: reflect.TypeOf(objType), name: name, opts: opts,
		store:        newStore(indexers),
		reflector:    toolscache.NewReflectorWithOptions(lw, objType, nil, toolscache.ReflectorOptions{Name: "streaming informer " + name}),
		onWatchError: toolscache.DefaultWatchErrorHandler, clientHasNoWatchList: watchlist.DoesClientNotSupportWatchListSemantics(lw),
		defaultResync: resync, resyncCheck: resync,
		stopping: make(chan struct{}), synced: make(chan struct{}), relisted: map[int]func(){},
	}
}

// GetStore is the informer's store (a *Store).
func (i *Informer) GetStore() toolscache.Store { return i.store }

// GetIndexer is the informer's store (a *Store).
func (i *Informer) GetIndexer() toolscache.Indexer { return i.store }

// AddIndexers adds indexers to the store, until the informer stops.
func (i *Informer) AddIndexers(indexers toolscache.Indexers) error {
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.stopped {
		return fmt.Errorf("indexer was not added because the informer of %s has stopped already", i.name)
	}
	return i.store.AddIndexers(indexers)
}

// GetController is deprecated upstream: a Controller whose Run does nothing.
func (i *Informer) GetController() toolscache.Controller { return controller{i} }

// SetTransform sets what is applied to each object before it is stored.
func (i *Informer) SetTransform(transform toolscache.TransformFunc) error {
	return i.beforeStart(func() { i.transform = transform })
}

// SetWatchErrorHandler sets what is told of each list or watch error.
func (i *Informer) SetWatchErrorHandler(handler toolscache.WatchErrorHandler) error {
	return i.SetWatchErrorHandlerWithContext(func(_ context.Context, r *toolscache.Reflector, err error) { handler(r, err) })
}

// SetWatchErrorHandlerWithContext sets what is told of each list or watch error.
func (i *Informer) SetWatchErrorHandlerWithContext(handler toolscache.WatchErrorHandlerWithContext) error {
	return i.beforeStart(func() { i.onWatchError = handler })
}

func (i *Informer) beforeStart(set func()) error {
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.started {
		return fmt.Errorf("informer of %s has already started", i.name)
	}
	set()
	return nil
}

// HasSynced reports whether the store has been filled by a whole list.
func (i *Informer) HasSynced() bool { return isClosed(i.synced) }

// HasSyncedChecker completes when HasSynced turns true.
func (i *Informer) HasSyncedChecker() toolscache.DoneChecker {
	return doneChecker{name: "streaming informer " + i.name, done: i.synced}
}

// LastSyncResourceVersion is the resourceVersion of the last event or list
// end processed.
func (i *Informer) LastSyncResourceVersion() string {
	i.rvMu.Lock()
	defer i.rvMu.Unlock()
	return i.lastRV
}

func (i *Informer) setLastRV(rv string) {
	i.rvMu.Lock()
	i.lastRV = rv
	i.rvMu.Unlock()
}

// IsStopped reports whether the informer has stopped: it never starts again.
func (i *Informer) IsStopped() bool {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.stopped
}

// Relisting reports whether a list is under way after the first sync: the
// store then mixes what the list brought with what it has yet to bring or
// sweep.
func (i *Informer) Relisting() bool { return i.relisting.Load() }

// OnRelisted calls fn (on the informer's goroutine: it must return quickly)
// each time a list after the first sync ends, once its sweep is done and its
// notifications queued. It returns fn's removal.
func (i *Informer) OnRelisted(fn func()) (remove func()) {
	i.relistedMu.Lock()
	defer i.relistedMu.Unlock()
	id := i.nextID
	i.nextID++
	i.relisted[id] = fn
	return func() {
		i.relistedMu.Lock()
		defer i.relistedMu.Unlock()
		delete(i.relisted, id)
	}
}

func (i *Informer) tellRelisted() {
	i.relistedMu.Lock()
	fns := make([]func(), 0, len(i.relisted))
	for _, fn := range i.relisted {
		fns = append(fns, fn)
	}
	i.relistedMu.Unlock()
	for _, fn := range fns {
		fn()
	}
}

// Run is RunWithContext until stopCh closes.
func (i *Informer) Run(stopCh <-chan struct{}) { i.RunWithContext(wait.ContextForChannel(stopCh)) }

// RunWithContext lists and watches until ctx ends, then stops the handlers.
// An informer runs once.
func (i *Informer) RunWithContext(ctx context.Context) {
	if !i.start() {
		klog.FromContext(ctx).Info("Warning: the streaming informer has started, run more than once is not allowed", "kind", i.name)
		return
	}
	defer i.stop()
	var wg sync.WaitGroup
	if i.resyncCheck > 0 {
		wg.Go(func() { i.resyncEvery(ctx, i.resyncCheck) })
	}
	newLoop(i).run(ctx)
	wg.Wait()
}

// start marks the informer started and starts the handlers added so far.
func (i *Informer) start() bool {
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.started {
		return false
	}
	i.started = true
	i.emit.Lock()
	defer i.emit.Unlock()
	for _, h := range i.handlers {
		i.runHandler(h)
	}
	return true
}

// stop marks the informer stopped, and waits for its handlers' goroutines.
func (i *Informer) stop() {
	i.mu.Lock()
	i.stopped = true
	i.mu.Unlock()
	close(i.stopping) // a handler's initial adds waiting for room give up
	// A handler being added saw stopped false: once it holds emit no more,
	// its goroutine is counted, and no other will be.
	i.emit.Lock()
	i.emit.Unlock() //nolint:staticcheck // an empty critical section: a barrier
	i.handlerGoroutines.Wait()
}

func isClosed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// doneChecker is a toolscache.DoneChecker of a channel.
type doneChecker struct {
	name string
	done <-chan struct{}
}

func (d doneChecker) Name() string          { return d.name }
func (d doneChecker) Done() <-chan struct{} { return d.done }

// controller is GetController's: the informer runs itself.
type controller struct{ i *Informer }

func (c controller) RunWithContext(context.Context)           {}
func (c controller) Run(<-chan struct{})                      {}
func (c controller) HasSynced() bool                          { return c.i.HasSynced() }
func (c controller) HasSyncedChecker() toolscache.DoneChecker { return c.i.HasSyncedChecker() }
func (c controller) LastSyncResourceVersion() string          { return c.i.LastSyncResourceVersion() }
