package engine_test

import (
	"context"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/metawatch/metawatch/pkg/config"
	"github.com/metawatch/metawatch/pkg/engine"
)

// resolve parses and resolves a configuration against the test control plane.
func resolve(t *testing.T, configYAML string) []config.ResolvedWatch {
	t.Helper()
	conf, err := config.Parse([]byte(configYAML))
	if err != nil {
		t.Fatalf("parsing config: %v", err)
	}
	watches, _, err := engine.Resolve(cp.Config, conf)
	if err != nil {
		t.Fatalf("resolving config: %v", err)
	}
	return watches
}

// startEngine starts a manager on cfg for watches and waits for its caches to sync.
func startEngine(t *testing.T, cfg *rest.Config, watches []config.ResolvedWatch) manager.Manager {
	t.Helper()
	mgr, err := engine.NewManager(cfg, watches, engine.Options{MetricsBindAddress: "0", HealthProbeBindAddress: "0"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	counts, err := engine.TrackCachedObjects(ctx, mgr.GetCache(), watches)
	if err != nil {
		t.Fatal(err)
	}
	counts.Publish()
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
	})
	syncCtx, syncCancel := context.WithTimeout(ctx, time.Minute)
	defer syncCancel()
	if !mgr.GetCache().WaitForCacheSync(syncCtx) {
		t.Fatal("caches did not sync")
	}
	return mgr
}
