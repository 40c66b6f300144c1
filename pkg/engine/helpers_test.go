package engine_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/metawatch/metawatch/pkg/config"
	"github.com/metawatch/metawatch/pkg/engine"
)

// podImage is in every test pod's spec, and so never in a metadata-only response.
const podImage = "registry.example/app:1"

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

func newClient(t *testing.T) client.Client {
	t.Helper()
	c, err := client.New(cp.Config, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func createNamespace(t *testing.T, c client.Client, name string) {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := c.Create(context.Background(), ns); err != nil {
		t.Fatal(err)
	}
}

func createPod(t *testing.T, c client.Client, ns, name string, labels map[string]string) *corev1.Pod {
	t.Helper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: podImage}}},
	}
	if err := c.Create(context.Background(), pod); err != nil {
		t.Fatal(err)
	}
	return pod
}

// eventually polls cond every 50ms for up to 30s; the wait is for convergence, not a timing assertion.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
