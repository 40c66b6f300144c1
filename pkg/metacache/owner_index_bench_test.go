package metacache

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/metawatch/metawatch/pkg/authority"
	"github.com/metawatch/metawatch/pkg/config"
)

// BenchmarkOwnerChainMemory measures what copyFromOwner costs in retained
// heap: the pods' cache as metawatch keeps it (the baseline: the same pods,
// the same transform, no owner chain), against the same pods keeping their
// controlling reference and indexed by it, plus the owner-only caches of
// their Deployments and ReplicaSets (the current one and 10 of history per
// Deployment, the default revisionHistoryLimit), each indexed as the cache
// indexes them. Objects carry the metadata the API server sends (labels,
// annotations, managedFields of their writers). Run with -benchtime=1x:
//
//	go test -run '^$' -bench OwnerChainMemory -benchtime=1x ./pkg/metacache
func BenchmarkOwnerChainMemory(b *testing.B) {
	for _, pods := range []int{10_000, 100_000} {
		for _, perDeployment := range []int{10, 50} {
			for _, withOwners := range []bool{false, true} {
				name := fmt.Sprintf("pods=%d/pods-per-deployment=%d/owners=%t", pods, perDeployment, withOwners)
				b.Run(name, func(b *testing.B) {
					for range b.N {
						perPod := retainedPerPod(pods, perDeployment, withOwners)
						b.ReportMetric(perPod, "B/pod")
					}
				})
			}
		}
	}
}

const historyPerDeployment = 10

// retainedPerPod builds the stores and returns the heap they retain, per pod.
func retainedPerPod(pods, perDeployment int, withOwners bool) float64 {
	benchPerDeployment = perDeployment
	resetShared() // each run pays for its own shared values
	before := heapAfterGC()
	podWatch := config.ResolvedWatch{GVK: schema.GroupVersionKind{Version: "v1", Kind: "Pod"}, Annotations: sets.New[string](), KeepController: withOwners}
	stores := []toolscache.Indexer{fill(podWatch, pods, benchPod)}
	if withOwners {
		deployments := pods / perDeployment
		owners := func(kind string) config.ResolvedWatch {
			return config.ResolvedWatch{GVK: schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: kind}, Owner: true, OwnersOnly: true, KeepController: true,
				Labels: sets.New[string](), Annotations: sets.New[string]()}
		}
		deploymentWatch := owners("Deployment")
		deploymentWatch.Labels = sets.New("cost-center")
		stores = append(stores, fill(deploymentWatch, deployments, benchDeployment),
			fill(owners("ReplicaSet"), deployments*(historyPerDeployment+1), benchReplicaSet))
	}
	after := heapAfterGC()
	runtime.KeepAlive(stores)
	return float64(after-before) / float64(pods)
}

// fill is an informer's store for w with n objects, transformed and indexed
// as the cache does (by namespace, and by controlling owner where kept).
func fill(w config.ResolvedWatch, n int, object func(i int) *metav1.PartialObjectMetadata) toolscache.Indexer {
	indexers := toolscache.Indexers{toolscache.NamespaceIndex: toolscache.MetaNamespaceIndexFunc}
	if w.KeepController {
		indexers["field:"+ControllerIndex] = controllerKey
	}
	store := toolscache.NewIndexer(toolscache.MetaNamespaceKeyFunc, indexers)
	transform := watchTransform(w, authority.NewIdentity("metawatch", ""))
	for i := range n {
		obj, _ := transform(object(i))
		if err := store.Add(obj); err != nil {
			panic(err)
		}
	}
	return store
}

func resetShared() {
	for _, t := range []interface{ reset() }{sharedLabels, sharedOwn, sharedOwners} {
		t.reset()
	}
}

func (t *table[V]) reset() {
	t.mu.Lock()
	defer t.mu.Unlock()
	clear(t.values)
	clear(t.held)
}

func heapAfterGC() uint64 {
	var m runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

func benchNamespace(i int) string { return fmt.Sprintf("shop-%03d", i/5000) }

func benchMeta(ns, name string, uid int, labels, annotations map[string]string, managers ...string) metav1.ObjectMeta {
	meta := metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(fmt.Sprintf("6f1c2d3e-0000-4000-8000-%012d", uid)), ResourceVersion: fmt.Sprint(1000 + uid),
		CreationTimestamp: metav1.NewTime(time.Unix(1_700_000_000, 0)), Labels: labels, Annotations: annotations}
	for _, m := range managers {
		meta.ManagedFields = append(meta.ManagedFields, metav1.ManagedFieldsEntry{Manager: m, Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1",
			FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(`{"f:metadata":{"f:labels":{".":{},"f:app":{}}},"f:spec":{"f:containers":{}}}`)})
	}
	return meta
}

func controllerRef(kind string, name string, uid int) []metav1.OwnerReference {
	return []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: kind, Name: name, UID: types.UID(fmt.Sprintf("6f1c2d3e-0000-4000-8000-%012d", uid)),
		Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}}
}

// The i-th pod's Deployment is i/perDeployment; its ReplicaSet the current
// one of that Deployment. Uids: pods from 0, Deployments from 1e9,
// ReplicaSets from 2e9, so that none collide.
var benchPerDeployment = 10

func deploymentName(d int) string { return fmt.Sprintf("app-%06d", d) }
func replicaSetName(d, revision int) string {
	return fmt.Sprintf("%s-%08x", deploymentName(d), revision)
}

func benchPod(i int) *metav1.PartialObjectMetadata {
	d := i / benchPerDeployment
	meta := benchMeta(benchNamespace(i), fmt.Sprintf("%s-%05d", deploymentName(d), i), i,
		map[string]string{"app.kubernetes.io/name": deploymentName(d), "pod-template-hash": fmt.Sprintf("%08x", historyPerDeployment), "team": "shop"},
		map[string]string{"prometheus.io/scrape": "true"}, "kube-controller-manager", "kubelet")
	meta.OwnerReferences = controllerRef("ReplicaSet", replicaSetName(d, historyPerDeployment), 2_000_000_000+d*(historyPerDeployment+1)+historyPerDeployment)
	return &metav1.PartialObjectMetadata{ObjectMeta: meta}
}

func benchDeployment(d int) *metav1.PartialObjectMetadata {
	meta := benchMeta(benchNamespace(d*benchPerDeployment), deploymentName(d), 1_000_000_000+d,
		map[string]string{"app.kubernetes.io/name": deploymentName(d), "cost-center": fmt.Sprint(d % 40)},
		map[string]string{"deployment.kubernetes.io/revision": fmt.Sprint(historyPerDeployment + 1)}, "kubectl-client-side-apply", "kube-controller-manager")
	return &metav1.PartialObjectMetadata{ObjectMeta: meta}
}

func benchReplicaSet(i int) *metav1.PartialObjectMetadata {
	d, revision := i/(historyPerDeployment+1), i%(historyPerDeployment+1)
	meta := benchMeta(benchNamespace(d*benchPerDeployment), replicaSetName(d, revision), 2_000_000_000+i,
		map[string]string{"app.kubernetes.io/name": deploymentName(d), "pod-template-hash": fmt.Sprintf("%08x", revision)},
		map[string]string{"deployment.kubernetes.io/revision": fmt.Sprint(revision + 1), "deployment.kubernetes.io/desired-replicas": "10"}, "kube-controller-manager")
	meta.OwnerReferences = controllerRef("Deployment", deploymentName(d), 1_000_000_000+d)
	return &metav1.PartialObjectMetadata{ObjectMeta: meta}
}
