package informer

import (
	"errors"
	"fmt"
	"sync"
	"time"

	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
)

// minimumResyncPeriod is client-go's: a shorter resync period is raised to it.
const minimumResyncPeriod = time.Second

// notification is one call of a handler: kind says which.
type notification struct {
	kind     notificationKind
	old, obj any
	initial  bool
}

type notificationKind uint8

const (
	added notificationKind = iota
	updated
	deleted
	// syncedMark: every notification of the initial list is before it.
	syncedMark
)

// registration is one handler: its bounded queue, drained by its own goroutine.
type registration struct {
	handler toolscache.ResourceEventHandler
	name    string
	logger  klog.Logger
	queue   chan notification
	backlog interface{ Add(float64) }
	// synced closes once the handler has been handed the initial list;
	// removed when it is removed; done when its goroutine has ended.
	synced, removed, done chan struct{}
	informerName          string
	owner                 *Informer
	removeOnce            sync.Once
	// resyncPeriod (0: none) and nextResync are guarded by the informer's emit.
	resyncPeriod time.Duration
	nextResync   time.Time
}

// HasSynced reports whether the informer has synced and the handler has
// been handed every notification of the initial list.
func (r *registration) HasSynced() bool { return isClosed(r.synced) }

// HasSyncedChecker completes when HasSynced turns true.
func (r *registration) HasSyncedChecker() toolscache.DoneChecker {
	return doneChecker{name: fmt.Sprintf("streaming informer %s + event handler %s", r.informerName, r.name), done: r.synced}
}

// ShutdownChan closes once the handler's goroutine has ended (for
// toolscache.ShutDownEventHandler).
func (r *registration) ShutdownChan() <-chan struct{} { return r.done }

// AddEventHandler adds handler with the informer's resync period.
func (i *Informer) AddEventHandler(handler toolscache.ResourceEventHandler) (toolscache.ResourceEventHandlerRegistration, error) {
	return i.AddEventHandlerWithOptions(handler, toolscache.HandlerOptions{})
}

// AddEventHandlerWithResyncPeriod adds handler with its own resync period.
func (i *Informer) AddEventHandlerWithResyncPeriod(handler toolscache.ResourceEventHandler, resync time.Duration) (toolscache.ResourceEventHandlerRegistration, error) {
	return i.AddEventHandlerWithOptions(handler, toolscache.HandlerOptions{ResyncPeriod: &resync})
}

// AddEventHandlerWithOptions adds handler. Added once the informer runs, it
// is handed an add of every stored object first (isInInitialList true): the
// informer's events wait meanwhile, as with client-go's informer, and the
// call returns once all but a queue's length of them are taken.
func (i *Informer) AddEventHandlerWithOptions(handler toolscache.ResourceEventHandler, o toolscache.HandlerOptions) (toolscache.ResourceEventHandlerRegistration, error) {
	i.mu.Lock()
	if i.stopped {
		i.mu.Unlock()
		return nil, fmt.Errorf("handler %v was not added to the informer of %s because it has stopped already", handler, i.name)
	}
	r := &registration{handler: handler, name: fmt.Sprintf("%T", handler), logger: ptr.Deref(o.Logger, klog.Background()),
		queue: make(chan notification, i.opts.QueueLength), backlog: i.opts.Backlog, informerName: i.name, owner: i,
		synced: make(chan struct{}), removed: make(chan struct{}), done: make(chan struct{})}
	r.resyncPeriod = i.resyncPeriodOf(r.logger, ptr.Deref(o.ResyncPeriod, i.defaultResync))
	started := i.started
	i.emit.Lock()
	i.mu.Unlock()
	defer i.emit.Unlock()
	r.nextResync = time.Now().Add(r.resyncPeriod)
	i.handlers = append(i.handlers, r)
	if !started {
		return r, nil // Run starts it; the list hands it everything
	}
	i.runHandler(r)
	i.store.eachKey(func(key string) {
		if obj, ok, _ := i.store.GetByKey(key); ok {
			i.push(r, notification{kind: added, obj: obj, initial: true})
		}
	})
	if i.HasSynced() {
		i.push(r, notification{kind: syncedMark})
	} // else the list's end pushes it
	return r, nil
}

// resyncPeriodOf is the period a handler asking for want gets, as client-go
// decides it: at least a second, and at least the informer's check period
// once it runs; before it runs, a shorter one shortens the check period.
func (i *Informer) resyncPeriodOf(logger klog.Logger, want time.Duration) time.Duration {
	if want <= 0 {
		return 0
	}
	if want < minimumResyncPeriod {
		logger.Info("Warning: resync period is too small. Changing it to the minimum allowed value", "resyncPeriod", want, "minimumResyncPeriod", minimumResyncPeriod)
		want = minimumResyncPeriod
	}
	switch {
	case i.started && i.resyncCheck == 0:
		logger.Info("Warning: the specified resyncPeriod is invalid because this informer doesn't support resyncing", "desired", want)
		return 0
	case i.started && want < i.resyncCheck:
		return i.resyncCheck
	case !i.started && (i.resyncCheck == 0 || want < i.resyncCheck):
		i.resyncCheck = want
	}
	return want
}

// RemoveEventHandler stops handing the handler notifications; one it is
// handling may still run. Removing one twice, or one not added, does nothing.
func (i *Informer) RemoveEventHandler(handle toolscache.ResourceEventHandlerRegistration) error {
	r, ok := handle.(*registration)
	if !ok {
		return fmt.Errorf("invalid registration type %T", handle)
	}
	if r.owner != i {
		return nil
	}
	// First, so that a push waiting for room in its queue (holding emit)
	// gives up.
	r.removeOnce.Do(func() { close(r.removed) })
	i.mu.Lock()
	defer i.mu.Unlock()
	i.emit.Lock()
	defer i.emit.Unlock()
	for n, h := range i.handlers {
		if h == r {
			i.handlers = append(i.handlers[:n:n], i.handlers[n+1:]...)
			if !i.started {
				close(r.done) // no goroutine will
			}
			return nil
		}
	}
	return nil
}

// notify hands n to every handler, waiting for room in each queue. Called
// with emit held.
func (i *Informer) notify(n notification) {
	for _, r := range i.handlers {
		i.push(r, n)
	}
}

// push queues n for r, waiting for room unless r is removed or the
// informer stops.
func (i *Informer) push(r *registration, n notification) {
	select {
	case r.queue <- n:
		r.count(1)
	case <-r.removed:
	case <-i.stopping:
	}
}

func (r *registration) count(n float64) {
	if r.backlog != nil {
		r.backlog.Add(n)
	}
}

// runHandler starts r's goroutine. Called with emit held.
func (i *Informer) runHandler(r *registration) {
	i.handlerGoroutines.Add(1)
	go func() {
		defer i.handlerGoroutines.Done()
		defer close(r.done)
		defer r.drop()
		for {
			select {
			case n := <-r.queue:
				r.count(-1)
				r.deliver(n)
			case <-r.removed:
				return
			case <-i.stopping:
				return
			}
		}
	}()
}

// drop empties r's queue once it stops: what was queued is never handed.
func (r *registration) drop() {
	for {
		select {
		case <-r.queue:
			r.count(-1)
		default:
			return
		}
	}
}

// deliver calls the handler. A panic is client-go's: it crashes the
// process unless utilruntime is told otherwise, and then only skips n.
func (r *registration) deliver(n notification) {
	defer utilruntime.HandleCrashWithLogger(r.logger)
	switch n.kind {
	case added:
		r.handler.OnAdd(n.obj, n.initial)
	case updated:
		r.handler.OnUpdate(n.old, n.obj)
	case deleted:
		r.handler.OnDelete(n.obj)
	case syncedMark:
		close(r.synced)
	default:
		utilruntime.HandleErrorWithLogger(r.logger, errors.New("unknown notification"), "kind", n.kind)
	}
}
