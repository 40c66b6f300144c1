package variant

import (
	"context"
	"fmt"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"

	"github.com/metawatch/metawatch/pkg/sharding"
)

// Spec is what every variant is given.
type Spec struct {
	// Selector is the label selector of the pods and namespaces every variant caches.
	Selector string
	// Label is the label the rule copies from a namespace to its pods.
	Label string
	// Concurrency is the number of reconciles a variant runs at once.
	Concurrency int
	// Shard, if set, runs the metawatch variant as one of several sharded replicas.
	Shard *Shard
}

// Shard is one replica's share: replica Index of Of, each with the buckets
// rendezvous hashing gives it among replica-0..replica-(Of-1), as a settled
// ring does, filtered by the API server (ServerSide) or on receipt.
type Shard struct {
	Index, Of  int
	ServerSide bool
}

// Buckets are the replica's buckets.
func (s Shard) Buckets() []sharding.Bucket {
	members := make([]string, s.Of)
	for i := range members {
		members[i] = fmt.Sprintf("replica-%d", i)
	}
	return sharding.Owned(sharding.Assign(members), members[s.Index])
}

// Counters are what every variant counts the same way: watch events
// delivered to its informers (adds, updates, deletes of pods and namespaces)
// and reconciles run.
type Counters struct {
	Events     atomic.Int64
	reconciles atomic.Int64
	// readReconciles, when set, reads reconciles from elsewhere (metawatch's
	// controller-runtime metrics) instead of the counter.
	readReconciles func() int64
}

// Received is the number of watch events received so far: those delivered
// to the informers, and those metawatch's transport left out because the
// object was unchanged (they arrived, and cost, all the same). Every variant
// counts them, so none that uses the transport can miss them: in one that
// does not, the counter stays 0.
func (c *Counters) Received() int64 { return c.Events.Load() + unchangedTotal() }

// Reconciles is the number of reconciles run so far.
func (c *Counters) Reconciles() int64 {
	if c.readReconciles != nil {
		return c.readReconciles()
	}
	return c.reconciles.Load()
}

// Running is a started variant.
type Running struct {
	// Run starts the variant's informers and controllers (set up, not yet
	// started, by Start: the harness measures the heap in between).
	Run func()
	// WaitSynced blocks until the variant's caches are synced.
	WaitSynced func(context.Context) error
	// CachedPods is the number of pods in the variant's cache.
	CachedPods func(context.Context) (int, error)
	// CachedPodUIDs are the uids of the pods in the variant's cache.
	CachedPodUIDs func(context.Context) ([]string, error)
	// Relists, if not nil, is the number of lists of the pods the variant
	// has completed after its first sync, by its own account (metawatch's
	// streaming informers, receive-only's initial-events bookmarks); nil
	// where the variant cannot tell (client-go's informers).
	Relists func() int64
	// ExpectRelist, if not nil, tells a variant that would otherwise stop
	// at the end of its watch (receive-only) to open it again from the
	// start, as a relist: the relist scenario is about to end it.
	ExpectRelist func()
}

// Variant is one way to run the rule (or, CacheOnly, to cache the pods).
type Variant struct {
	Name, Description string
	// CacheOnly variants run no controller: they show one memory step.
	CacheOnly bool
	// Deployed is the chart variant: metawatch in the cluster's pods, started
	// by the harness with helm, not in a process of the harness (Start is nil).
	Deployed bool
	// Start starts the variant on cfg until ctx ends.
	Start func(ctx context.Context, cfg *rest.Config, spec Spec, counters *Counters) (*Running, error)
}

var (
	podGVK       = corev1.SchemeGroupVersion.WithKind("Pod")
	namespaceGVK = corev1.SchemeGroupVersion.WithKind("Namespace")
	podsGVR      = schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	namespaceGVR = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
)

// All is every variant: the controllers first, typed (the baseline) at the head.
func All() []Variant {
	return append([]Variant{typed(), metadataOnly(), metadataInformer(), metawatch(), metawatchStockInformer(), metawatchHTTP2(), metawatchBookmarkEach(), metawatchDecodeAll(), metawatchGCByLimit(),
		onOneP(metawatch(), "metawatch with GOMAXPROCS=1, as the chart runs it"),
		onOneP(metawatchHTTP2(), "metawatch-http2 with GOMAXPROCS=1: HTTP/2 watches as the chart ran them before #14"),
		onOneP(metawatchMemoryLimit("256Mi"), "metawatch as the chart runs it with resources.limits.memory 256Mi: GOMAXPROCS=1 and --container-memory-limit=256Mi"),
		onOneP(metawatchMemoryLimit("1Gi"), "metawatch as the chart runs it by default (resources.limits.memory 1Gi): GOMAXPROCS=1 and --container-memory-limit=1Gi"),
		metawatchMemoryLimit(peakGoalLimit), metawatchSyncGOGC(syncGOGC), metawatchGOGC(lowGOGC), metawatchFreeAfterSync(), metawatchNoCompression(),
		typedCache(), receiveOnly(), receiveOnlyUncompressed()}, shrinkSteps()...)
}

// Names returns the names of vs.
func Names(vs []Variant) []string {
	names := make([]string, len(vs))
	for i, v := range vs {
		names[i] = v.Name
	}
	return names
}

// Chart is metawatch as users run it: the Helm chart's Deployment, on a
// cluster with a node (--local-cluster).
func Chart() Variant {
	return Variant{Name: "chart", Deployed: true, Description: "metawatch as users run it: the Helm chart with its default values " +
		"but fieldManager, metawatch as every variant writes (2 replicas, client QPS 50 and burst 100, 1 GiB memory limit) on the node, the ConfigMap below; figures of the leader's process, " +
		"read from /proc and its metrics endpoint; sync is helm install to the leader Ready"}
}

// Named returns the variant called name.
func Named(name string) (Variant, error) {
	for _, v := range append(All(), Chart()) {
		if v.Name == name {
			return v, nil
		}
	}
	return Variant{}, fmt.Errorf("unknown variant %q (have %v)", name, Names(All()))
}

// ApplyBody is the rule's write: the label, and nothing else, as a server-side
// apply to a pod. The harness's bare-client reference makes the same one.
func ApplyBody(label, namespace, name, value string) []byte {
	return fmt.Appendf(nil, `{"apiVersion":"v1","kind":"Pod","metadata":{"name":%q,"namespace":%q,"labels":{%q:%q}}}`,
		name, namespace, label, value)
}

// needsWrite is the rule: the pod's label must equal its namespace's, when the namespace has one.
func needsWrite(spec Spec, podLabels, namespaceLabels map[string]string) (value string, write bool) {
	value, ok := namespaceLabels[spec.Label]
	return value, ok && podLabels[spec.Label] != value
}
