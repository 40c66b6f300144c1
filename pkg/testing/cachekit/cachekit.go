// Package cachekit starts metawatch's caches for the tests of the packages
// whose code runs in them (sharding, metacache, wire, manager): the cache the
// Manager assembles (StartEngine), a plain metadata-only pod cache
// (StartPodCache), and reads them (CachedPods).
//
// It is apart from testkit because it imports pkg/metamanager, which imports
// packages whose own tests import testkit.
package cachekit

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/metawatch/metawatch/pkg/config"
	"github.com/metawatch/metawatch/pkg/metacache"
	"github.com/metawatch/metawatch/pkg/metamanager"
	"github.com/metawatch/metawatch/pkg/testing/testkit"
)

// StartEngine starts a manager on cfg for watches and waits for its caches to sync.
func StartEngine(t testing.TB, cfg *rest.Config, watches []config.ResolvedWatch) manager.Manager {
	t.Helper()
	return StartEngineWith(t, cfg, watches, metamanager.Options{MetricsBindAddress: "0"})
}

// StartEngineWith is StartEngine with opts.
func StartEngineWith(t testing.TB, cfg *rest.Config, watches []config.ResolvedWatch, opts metamanager.Options) manager.Manager {
	t.Helper()
	mgr, err := metamanager.New(cfg, watches, opts)
	if err != nil {
		t.Fatal(err)
	}
	counts, err := metacache.TrackCachedObjects(t.Context(), mgr.GetCache(), watches)
	if err != nil {
		t.Fatal(err)
	}
	counts.Publish()
	testkit.Start(t, mgr)
	syncCtx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if !mgr.GetCache().WaitForCacheSync(syncCtx) {
		t.Fatal("caches did not sync")
	}
	return mgr
}

// StartPodCache starts a cache with o and its metadata-only pod informer, and
// waits for it to sync.
func StartPodCache(t testing.TB, cfg *rest.Config, o cache.Options) cache.Cache {
	t.Helper()
	c, err := cache.New(cfg, o)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.GetInformer(t.Context(), PodMetadata()); err != nil {
		t.Fatal(err)
	}
	testkit.Start(t, c)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if !c.WaitForCacheSync(ctx) {
		t.Fatal("the cache did not sync")
	}
	return c
}

// PodMetadata is an empty metadata-only Pod, as the caches hold them.
func PodMetadata() *metav1.PartialObjectMetadata {
	return metacache.NewObject(corev1.SchemeGroupVersion.WithKind("Pod"))
}

// CachedPods are the namespace/name of every pod r holds.
func CachedPods(t testing.TB, r client.Reader) sets.Set[string] {
	t.Helper()
	list := metacache.NewList(corev1.SchemeGroupVersion.WithKind("Pod"))
	if err := r.List(t.Context(), list); err != nil {
		t.Fatal(err)
	}
	got := sets.New[string]()
	for _, p := range list.Items {
		got.Insert(p.Namespace + "/" + p.Name)
	}
	return got
}
