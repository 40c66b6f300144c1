package informer

import (
	"context"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
)

// errNoWatchList: the stream carried a change before the bookmark that
// ends the initial events, so the API server ignored sendInitialEvents.
var errNoWatchList = errors.New("the API server does not support watch-list: a change came before the end of the initial events")

// watchList lists with a watch-list, storing each object as it comes, and
// returns the stream, open past the bookmark that ended the initial events.
// An attempt cut short is tried again (the same list, a new epoch), at once
// if the resourceVersion expired (then from the most recent state), after a
// backoff if the API server is unavailable or busy. Any other error is the
// caller's, which falls back to a paged list, as the reflector does.
func (l *loop) watchList(ctx context.Context) (watch.Interface, error) {
	for ctx.Err() == nil {
		rv := l.rv
		if l.rvGone {
			rv = ""
		}
		l.begin()
		start := time.Now()
		w, err := l.i.lw.WatchWithContext(ctx, metav1.ListOptions{ResourceVersion: rv, ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan,
			SendInitialEvents: ptr.To(true), AllowWatchBookmarks: true, TimeoutSeconds: watchListTimeout()})
		if err == nil {
			var ended bool
			if ended, err = l.initialEvents(ctx, w, start); ended && err == nil {
				return w, nil
			}
			w.Stop()
		}
		switch {
		case err == nil: // ended before its bookmark: again
		case ctx.Err() != nil:
			return nil, ctx.Err()
		case retriable(err):
			klog.FromContext(ctx).V(2).Info("watch-list failed - backing off", "kind", l.i.name, "err", err)
			l.backOff(ctx)
		case isExpired(err) || isTooLarge(err):
			l.rvGone = true
		case errors.Is(err, errNoWatchList):
			l.noWatchList = true
			return nil, err
		default:
			return nil, err
		}
	}
	return nil, ctx.Err()
}

// initialEvents stores the stream's initial events until the bookmark that
// ends them, then sweeps. It reports whether that bookmark came.
func (l *loop) initialEvents(ctx context.Context, w watch.Interface, start time.Time) (bool, error) {
	objects := 0
	for {
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case ev, ok := <-w.ResultChan():
			if !ok {
				if objects == 0 && time.Since(start) < time.Second {
					return false, &toolscache.VeryShortWatchError{Name: l.i.reflector.Name()}
				}
				return false, nil
			}
			switch {
			case ev.Type == watch.Error:
				return false, apierrors.FromObject(ev.Object)
			case !l.expected(ctx, ev):
			case ev.Type == watch.Added:
				objects++
				if err := l.i.listed(ev.Object); err != nil {
					toolsLog(ctx, err, "Unable to store a listed object", l.i.name)
				}
			case ev.Type == watch.Bookmark && isInitialEventsEnd(ev.Object):
				l.listEnded(ctx, resourceVersionOf(ev.Object), objects)
				return true, nil
			case ev.Type == watch.Bookmark:
				// Progress, before the list's end: its resourceVersion is not
				// one the store has reached yet.
			default:
				return false, errNoWatchList
			}
		}
	}
}

func isInitialEventsEnd(obj any) bool {
	m, err := meta.Accessor(obj)
	return err == nil && m.GetAnnotations()[metav1.InitialEventsAnnotationKey] == "true"
}

// pagedList lists a page at a time from the most recent state (a consistent
// read, resourceVersion ""), storing each page's objects before asking for
// the next, and sweeps after the last. A continue token that expired starts
// the list again.
func (l *loop) pagedList(ctx context.Context) error {
	l.begin()
	o := metav1.ListOptions{Limit: l.i.opts.PageSize}
	objects := 0
	for {
		list, err := l.i.lw.ListWithContext(ctx, o)
		switch {
		case err == nil:
		case o.Continue != "" && isExpired(err):
			l.begin()
			o, objects = metav1.ListOptions{Limit: l.i.opts.PageSize}, 0
			continue
		default:
			return fmt.Errorf("failed to list %s: %w", l.i.name, err)
		}
		next, rv, n, err := l.storePage(ctx, list)
		if err != nil {
			return err
		}
		objects += n
		if next == "" {
			l.listEnded(ctx, rv, objects)
			return nil
		}
		o = metav1.ListOptions{Limit: l.i.opts.PageSize, Continue: next}
	}
}

// storePage stores a page's items, each on its own (not pointing into the
// page, which may then be freed), and returns its continue token and
// resourceVersion.
func (l *loop) storePage(ctx context.Context, list runtime.Object) (next, rv string, n int, err error) {
	m, err := meta.ListAccessor(list)
	if err != nil {
		return "", "", 0, fmt.Errorf("unable to understand list result %T: %w", list, err)
	}
	items, err := meta.ExtractListWithAlloc(list)
	if err != nil {
		return "", "", 0, fmt.Errorf("unable to understand list result %T: %w", list, err)
	}
	for _, item := range items {
		if err := l.i.listed(item); err != nil {
			toolsLog(ctx, err, "Unable to store a listed object", l.i.name)
		}
	}
	return m.GetContinue(), m.GetResourceVersion(), len(items), nil
}
