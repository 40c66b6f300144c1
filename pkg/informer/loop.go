package informer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"reflect"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	clientfeatures "k8s.io/client-go/features"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// client-go's reflector's: the backoff after errors, reset after two
// minutes without one, and a watch's timeout, random in [5m, 10m].
const (
	backoffInit     = 800 * time.Millisecond
	backoffMax      = 30 * time.Second
	backoffReset    = 2 * time.Minute
	minWatchTimeout = 5 * time.Minute
	// minWatchListTimeout is a watch-list's, random in [1h, 2h]: its
	// initial events must all come before its timeout, or the list begins
	// again from nothing. A million objects from a busy API server take
	// longer than a watch's 5-10 minutes (the list never ended); the
	// stream goes on as the watch after the bookmark.
	minWatchListTimeout = time.Hour
)

// loop is the informer's list/watch loop and its state between attempts.
type loop struct {
	i     *Informer
	delay wait.DelayFunc
	// rv is the resourceVersion to watch from: the last seen. rvGone says
	// the API server no longer has it (expired, or too large), so the next
	// list asks for the most recent state.
	rv     string
	rvGone bool
	// listed is false until a list ends, and again once a watch expires.
	listed bool
	// listing: a list attempt has begun that has not ended, so the next
	// attempt is another try of the same list.
	listing bool
	// noWatchList: a stream showed the API server ignores watch-lists.
	noWatchList bool
}

func newLoop(i *Informer) *loop {
	b := wait.Backoff{Duration: backoffInit, Cap: backoffMax, Steps: int(math.Ceil(float64(backoffMax) / float64(backoffInit))), Factor: 2, Jitter: 1}
	if i.opts.Backoff != nil {
		b = *i.opts.Backoff
	}
	// As the reflector: no watch-list where client-go's feature is off, or
	// the client says it cannot (fake clients).
	noWatchList := !clientfeatures.FeatureGates().Enabled(clientfeatures.WatchListClient) || i.clientHasNoWatchList
	return &loop{i: i, delay: b.DelayWithReset(clock.RealClock{}, backoffReset), noWatchList: noWatchList}
}

// run lists and watches until ctx ends, backing off between rounds as
// client-go's reflector does (wait.DelayFunc.Until, sliding).
func (l *loop) run(ctx context.Context) {
	_ = l.delay.Until(ctx, true, true, func(ctx context.Context) (bool, error) {
		if err := l.round(ctx); err != nil && ctx.Err() == nil {
			l.i.onWatchError(ctx, l.i.reflector, err)
		}
		return false, nil
	})
}

// round lists if it must, then watches until the watch fails.
func (l *loop) round(ctx context.Context) error {
	var w watch.Interface
	if !l.listed {
		var err error
		if w, err = l.list(ctx); err != nil || ctx.Err() != nil {
			return err
		}
	}
	return l.watch(ctx, w)
}

// list fills the store with a watch-list, whose stream it returns to watch
// on, or else with a paged list (nil stream).
func (l *loop) list(ctx context.Context) (watch.Interface, error) {
	if !l.noWatchList {
		w, err := l.watchList(ctx)
		if err == nil || ctx.Err() != nil {
			return w, err
		}
		klog.FromContext(ctx).V(4).Info("Data couldn't be fetched in watchlist mode. Falling back to a paged list.", "kind", l.i.name, "err", err)
	}
	return nil, l.pagedList(ctx)
}

// begin starts a list attempt.
func (l *loop) begin() {
	l.i.beginList(!l.listing)
	l.listing = true
}

// listEnded sweeps what the list attempt did not bring: the store is now
// the state at rv.
func (l *loop) listEnded(ctx context.Context, rv string, objects int) {
	swept := l.i.sweep(rv)
	l.rv, l.rvGone, l.listed, l.listing = rv, false, true, false
	klog.FromContext(ctx).V(2).Info("Caches populated", "kind", l.i.name, "resourceVersion", rv, "objects", objects, "swept", swept)
}

// watch follows the changes from l.rv on w, or on a new watch, until one
// fails. A watch that ends is opened again from the last resourceVersion
// seen; one that expires makes the next round relist.
func (l *loop) watch(ctx context.Context, w watch.Interface) error {
	for ctx.Err() == nil {
		start := time.Now()
		if w == nil {
			var err error
			if w, err = l.i.lw.WatchWithContext(ctx, metav1.ListOptions{ResourceVersion: l.rv, AllowWatchBookmarks: true, TimeoutSeconds: watchTimeout()}); err != nil {
				if retriable(err) {
					l.backOff(ctx)
					continue
				}
				l.expiredRelists(err)
				return err
			}
		}
		err := l.follow(ctx, w, start)
		w.Stop()
		w = nil
		switch {
		case err == nil || ctx.Err() != nil:
		case isExpired(err) || isTooLarge(err):
			l.listed, l.rvGone = false, isTooLarge(err)
			klog.FromContext(ctx).V(4).Info("Watch closed", "kind", l.i.name, "err", err)
			return nil // relisted after the round's delay, as by the reflector
		case apierrors.IsTooManyRequests(err):
			l.backOff(ctx)
		default:
			return err
		}
	}
	return nil
}

// follow applies w's events until it ends.
func (l *loop) follow(ctx context.Context, w watch.Interface, start time.Time) error {
	events := 0
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-w.ResultChan():
			if !ok {
				if events == 0 && time.Since(start) < time.Second {
					return &toolscache.VeryShortWatchError{Name: l.i.reflector.Name()}
				}
				return nil
			}
			events++
			if err := l.applyWatchEvent(ctx, ev); err != nil {
				return err
			}
		}
	}
}

// applyWatchEvent applies one event of the watch (after the list).
func (l *loop) applyWatchEvent(ctx context.Context, ev watch.Event) error {
	if ev.Type == watch.Error {
		return apierrors.FromObject(ev.Object)
	}
	if !l.expected(ctx, ev) {
		return nil
	}
	var err error
	switch ev.Type {
	case watch.Added, watch.Modified:
		err = l.i.upsert(ev.Object)
	case watch.Deleted:
		err = l.i.remove(ev.Object)
	case watch.Bookmark:
		l.i.bookmark(resourceVersionOf(ev.Object))
	default:
		err = fmt.Errorf("unknown watch event type %q", ev.Type)
	}
	if err != nil {
		toolsLog(ctx, err, "Unable to apply a watch event", l.i.name)
		return nil
	}
	l.rv = resourceVersionOf(ev.Object)
	l.i.setLastRV(l.rv)
	return nil
}

// expected reports whether ev's object is of the informer's type; one that
// is not is dropped, as by the reflector.
func (l *loop) expected(ctx context.Context, ev watch.Event) bool {
	if l.i.expected == nil || reflect.TypeOf(ev.Object) == l.i.expected {
		return true
	}
	toolsLog(ctx, nil, "Unexpected watch event object type", l.i.name, "expectedType", l.i.expected, "actualType", reflect.TypeOf(ev.Object))
	return false
}

// expiredRelists makes the next round relist if err says l.rv is gone.
func (l *loop) expiredRelists(err error) {
	if isExpired(err) || isTooLarge(err) {
		l.listed = false
	}
}

// backOff waits the next backoff delay, or until ctx ends.
func (l *loop) backOff(ctx context.Context) {
	t := time.NewTimer(l.delay())
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

func watchTimeout() *int64 { return randomTimeout(minWatchTimeout) }

func watchListTimeout() *int64 { return randomTimeout(minWatchListTimeout) }

// randomTimeout is a timeout in seconds, random in [least, 2*least].
func randomTimeout(least time.Duration) *int64 {
	s := int64(least.Seconds() * (1 + rand.Float64()))
	return &s
}

// isExpired: the resourceVersion asked for is too old (410), as the
// reflector tells it.
func isExpired(err error) bool { return apierrors.IsResourceExpired(err) || apierrors.IsGone(err) }

// isTooLarge: the resourceVersion asked for is newer than the API server's.
func isTooLarge(err error) bool {
	return apierrors.HasStatusCause(err, metav1.CauseTypeResourceVersionTooLarge)
}

// retriable errors are the API server's unavailability or load: the same
// request is tried again after a backoff, as by the reflector.
func retriable(err error) bool {
	return utilnet.IsConnectionRefused(err) || apierrors.IsTooManyRequests(err)
}

func toolsLog(ctx context.Context, err error, msg, kind string, kv ...any) {
	if err == nil {
		err = errors.New(msg)
	}
	if errors.Is(err, io.EOF) {
		return
	}
	klog.FromContext(ctx).Error(err, msg, append([]any{"kind", kind}, kv...)...)
}
