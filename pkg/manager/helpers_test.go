package manager_test

import (
	"context"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/metawatch/metawatch/pkg/config"
	mwmanager "github.com/metawatch/metawatch/pkg/manager"
	"github.com/metawatch/metawatch/pkg/metacache"
	"github.com/metawatch/metawatch/pkg/testing/testkit"
)

// startEngine starts a manager on cfg for watches and waits for its caches to sync.
func startEngine(t *testing.T, cfg *rest.Config, watches []config.ResolvedWatch) manager.Manager {
	t.Helper()
	return startEngineWith(t, cfg, watches, mwmanager.Options{MetricsBindAddress: "0"})
}

// startEngineWith is startEngine with opts.
func startEngineWith(t *testing.T, cfg *rest.Config, watches []config.ResolvedWatch, opts mwmanager.Options) manager.Manager {
	t.Helper()
	mgr, err := mwmanager.New(cfg, watches, opts)
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
