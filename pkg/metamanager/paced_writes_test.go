package metamanager_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/metawatch/metawatch/pkg/authority/pace"
	"github.com/metawatch/metawatch/pkg/metamanager"
	"github.com/metawatch/metawatch/pkg/testing/cachekit"
	"github.com/metawatch/metawatch/pkg/testing/controlplane"
	"github.com/metawatch/metawatch/pkg/testing/testkit"
)

// The manager's client writes through the pacer, not through the config's
// rate limiter (whose token bucket would cap writes below the pacer's
// ceiling), while its API reader keeps the config's rate limit.
func TestWritesArePacedAndReadsKeepTheirBudget(t *testing.T) {
	controlplane.SkipIfShort(t)
	c := testkit.Client(t, cp.Config)
	testkit.Namespace(t, c, "paced", nil)
	testkit.Pod(t, c, "paced", "p", nil)
	reads := &markedWaits{RateLimiter: flowcontrol.NewFakeAlwaysRateLimiter()}
	cfg := rest.CopyConfig(cp.Config)
	cfg.RateLimiter = reads
	pacer := pace.New(pace.DefaultRateBounds(), logr.Discard(), nil)
	watches := testkit.Resolve(t, cp.Config, "watches:\n- kind: Pod\n  namespaces: [paced]\n")
	mgr := cachekit.StartEngineWith(t, cfg, watches, metamanager.Options{MetricsBindAddress: "0", Writes: pacer})

	ctx := context.WithValue(t.Context(), marked{}, true)
	pod := &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}, ObjectMeta: metav1.ObjectMeta{Namespace: "paced", Name: "p"}}
	for i := range 5 {
		patch := client.RawPatch("application/merge-patch+json", []byte(`{"metadata":{"labels":{"n":"`+string(rune('a'+i))+`"}}}`))
		if err := mgr.GetClient().Patch(ctx, pod, patch); err != nil {
			t.Fatal(err)
		}
	}
	if n := reads.marked.Load(); n != 0 {
		t.Errorf("%d of 5 writes waited for the config's rate limiter: writes must wait for the pacer only", n)
	}
	if pacer.Served() == (pace.ServedBy{}) {
		t.Errorf("the pacer saw no answer to the writes: they did not go through it")
	}
	if err := mgr.GetAPIReader().Get(ctx, client.ObjectKey{Namespace: "paced", Name: "p"}, &corev1.Pod{}); err != nil {
		t.Fatal(err)
	}
	if reads.marked.Load() == 0 {
		t.Errorf("a read of the API reader did not wait for the config's rate limiter: reads keep --kube-api-qps")
	}
}

// marked is the context key of the test's own requests.
type marked struct{}

// markedWaits counts the waits of requests whose context is marked.
type markedWaits struct {
	flowcontrol.RateLimiter
	marked atomic.Int64
}

func (m *markedWaits) Wait(ctx context.Context) error {
	if ctx.Value(marked{}) != nil {
		m.marked.Add(1)
	}
	return m.RateLimiter.Wait(ctx)
}
