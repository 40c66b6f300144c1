package access_test

import (
	"context"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/metawatch/metawatch/pkg/access"
	"github.com/metawatch/metawatch/pkg/testing/controlplane"
	"github.com/metawatch/metawatch/pkg/testing/testkit"
)

var podKind = schema.GroupKind{Kind: "Pod"}

// AccessLoss records a kind whose list or watch the API server forbids,
// once, however often it is refused, and tells onLoss once; an allowed
// call, or one that fails for another reason (no server), is no loss.
func TestAccessLossRecordsAForbiddenKindOnce(t *testing.T) {
	controlplane.SkipIfShort(t)
	cases := map[string]struct {
		cfg      *rest.Config
		watch    bool // call Watch, else List
		wantLoss bool
	}{
		"a forbidden list is a loss":            {cfg: as("access-nobody"), wantLoss: true},
		"a forbidden watch is a loss":           {cfg: as("access-nobody"), watch: true, wantLoss: true},
		"an allowed list is no loss":            {cfg: cp.Config},
		"an allowed watch is no loss":           {cfg: cp.Config, watch: true},
		"a server that is not there is no loss": {cfg: nowhere(t)},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var told []schema.GroupKind
			loss := access.NewAccessLoss(func(gk schema.GroupKind, _ error) { told = append(told, gk) })
			lw := loss.ListerWatcher(podsListerWatcher(t, tc.cfg), podObject())
			for range 3 {
				call(t, lw, tc.watch)
			}
			err := loss.Forbidden(podKind)
			switch {
			case tc.wantLoss && (!apierrors.IsForbidden(err) || len(told) != 1 || len(loss.Kinds()) != 1):
				t.Errorf("after 3 refusals: Forbidden(Pod) = %v, onLoss told %v, Kinds %v; want the 403, told once, one kind", err, told, loss.Kinds())
			case !tc.wantLoss && (err != nil || len(told) != 0 || len(loss.Kinds()) != 0):
				t.Errorf("Forbidden(Pod) = %v, onLoss told %v, Kinds %v; want no loss", err, told, loss.Kinds())
			}
		})
	}
}

// What needs no server: a nil AccessLoss forbids nothing, and an object
// whose kind is not set cannot be reported by kind, so its lister-watcher
// is left as it is.
func TestAccessLossLeavesWhatItCannotTell(t *testing.T) {
	var none *access.AccessLoss
	if err := none.Forbidden(podKind); err != nil {
		t.Errorf("a nil AccessLoss says Pod is forbidden: %v", err)
	}
	lw := &toolscache.ListWatch{}
	if got := access.NewAccessLoss(nil).ListerWatcher(lw, &metav1.PartialObjectMetadata{}); got != toolscache.ListerWatcher(lw) {
		t.Errorf("an object without a kind got a lister-watcher %T, want its own back", got)
	}
}

// podsListerWatcher lists and watches pods as cfg, through the metadata client.
func podsListerWatcher(t *testing.T, cfg *rest.Config) toolscache.ListerWatcher {
	t.Helper()
	mc, err := metadata.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	pods := mc.Resource(schema.GroupVersionResource{Version: "v1", Resource: "pods"})
	return &toolscache.ListWatch{
		ListWithContextFunc:  func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) { return pods.List(ctx, o) },
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) { return pods.Watch(ctx, o) },
	}
}

func call(t *testing.T, lw toolscache.ListerWatcher, watching bool) {
	t.Helper()
	in := toolscache.ToListerWatcherWithContext(lw)
	if !watching {
		_, _ = in.ListWithContext(t.Context(), metav1.ListOptions{Limit: 1})
		return
	}
	if w, err := in.WatchWithContext(t.Context(), metav1.ListOptions{}); err == nil {
		w.Stop()
	}
}

func podObject() *metav1.PartialObjectMetadata {
	return &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}}
}

// nowhere is cp's config pointed at an address nothing listens on.
func nowhere(t *testing.T) *rest.Config {
	t.Helper()
	cfg := rest.CopyConfig(cp.Config)
	cfg.Host = "https://" + testkit.FreeAddress(t)
	return cfg
}
