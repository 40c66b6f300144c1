package access

import (
	"context"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"
)

// AccessLoss records the kinds whose list or watch the API server started to
// forbid while their informer ran (RBAC changed under a running metawatch).
// An established watch outlives a revoked permission; the next list or watch
// (a dropped connection, a watch timeout) gets 403, and from then on the
// informer's cache no longer follows the cluster. Whatever metawatch owns on
// such a kind, or copies from such Namespaces, must then stay as it is: a
// write from a cache that went stale could flip or strip keys.
type AccessLoss struct {
	mu     sync.Mutex
	kinds  map[schema.GroupKind]error
	onLoss func(schema.GroupKind, error)
}

// NewAccessLoss returns an empty AccessLoss; onLoss (if not nil) is called
// once per kind, when its access is first found lost.
func NewAccessLoss(onLoss func(schema.GroupKind, error)) *AccessLoss {
	return &AccessLoss{kinds: map[schema.GroupKind]error{}, onLoss: onLoss}
}

// Forbidden returns why kind's informer can no longer list or watch, or nil.
func (a *AccessLoss) Forbidden(kind schema.GroupKind) error {
	if a == nil {
		return nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.kinds[kind]
}

// Kinds lists the kinds whose access was lost.
func (a *AccessLoss) Kinds() []schema.GroupKind {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make([]schema.GroupKind, 0, len(a.kinds))
	for k := range a.kinds {
		out = append(out, k)
	}
	return out
}

func (a *AccessLoss) observe(kind schema.GroupKind, err error) {
	if !apierrors.IsForbidden(err) {
		return
	}
	a.mu.Lock()
	_, known := a.kinds[kind]
	if !known {
		a.kinds[kind] = err
	}
	a.mu.Unlock()
	if !known && a.onLoss != nil {
		a.onLoss(kind, err)
	}
}

// NewInformer is cache.Options.NewInformer: the stock informer, with its
// list and watch calls reported to a.
func (a *AccessLoss) NewInformer(lw toolscache.ListerWatcher, obj runtime.Object, resync time.Duration, indexers toolscache.Indexers) toolscache.SharedIndexInformer {
	return toolscache.NewSharedIndexInformer(a.ListerWatcher(lw, obj), obj, resync, indexers)
}

// ListerWatcher is lw, for obj's kind, with its list and watch calls reported to a.
func (a *AccessLoss) ListerWatcher(lw toolscache.ListerWatcher, obj runtime.Object) toolscache.ListerWatcher {
	kind := obj.GetObjectKind().GroupVersionKind().GroupKind()
	if kind.Empty() {
		return lw
	}
	in := toolscache.ToListerWatcherWithContext(lw)
	return &toolscache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			list, err := in.ListWithContext(ctx, o)
			a.observe(kind, err)
			return list, err
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			w, err := in.WatchWithContext(ctx, o)
			a.observe(kind, err)
			return w, err
		},
	}
}
