package main

import (
	"context"
	"fmt"
	"os"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/metawatch/metawatch/bench/seed"
	"github.com/metawatch/metawatch/pkg/config"
	"github.com/metawatch/metawatch/pkg/controller"
	"github.com/metawatch/metawatch/pkg/engine"
	"github.com/metawatch/metawatch/pkg/metrics"
	"github.com/metawatch/metawatch/pkg/rules"
)

// timeMetawatch starts metawatch, lets it converge on cost-center=a (untimed), then
// times how long changing the namespace's label to cost-center=b takes to reach every pod.
func timeMetawatch(ctx context.Context, cfg *rest.Config, c client.Client, o options) (time.Duration, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done, err := startMetawatch(ctx, cfg, o)
	if err != nil {
		return 0, err
	}
	applied := func() float64 {
		return counterValue(metrics.RuleWrites.WithLabelValues("copy-cost-center", "Pod", metrics.ResultApplied))
	}
	if err := waitFor(ctx, func() bool { return applied() >= float64(o.pods) }); err != nil {
		return 0, fmt.Errorf("initial convergence: %w", err)
	}
	fmt.Fprintf(os.Stderr, "converge: metawatch converged on cost-center=a; changing the namespace label\n")
	base := applied()
	start := time.Now()
	patch := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"cost-center":"b"}}}`))
	if err := c.Patch(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: o.namespace}}, patch); err != nil {
		return 0, err
	}
	if err := waitFor(ctx, func() bool { return applied()-base >= float64(o.pods) }); err != nil {
		return 0, err
	}
	elapsed := time.Since(start)
	cancel()
	<-done
	return elapsed, verifyLabel(context.Background(), c, o, "b")
}

func startMetawatch(ctx context.Context, cfg *rest.Config, o options) (<-chan struct{}, error) {
	conf, err := config.Parse(fmt.Appendf(nil, "watches:\n- kind: Pod\n  namespaces: [%s]\nrules:\n- name: copy-cost-center\n  kinds: [Pod]\n  copyFromNamespace: {labels: [cost-center]}\n", o.namespace))
	if err != nil {
		return nil, err
	}
	watches, _, err := engine.Resolve(cfg, conf)
	if err != nil {
		return nil, err
	}
	rulesByKind, err := rules.Compile(conf)
	if err != nil {
		return nil, err
	}
	mgr, err := engine.NewManager(cfg, watches, engine.Options{MetricsBindAddress: "0", HealthProbeBindAddress: "0"})
	if err != nil {
		return nil, err
	}
	if err := controller.Setup(mgr, watches, rulesByKind, controller.Options{MaxConcurrentReconciles: o.concurrency}); err != nil {
		return nil, err
	}
	done := make(chan struct{})
	go func() { defer close(done); _ = mgr.Start(ctx) }()
	return done, nil
}

// timeBareClient does what metawatch does for each pod, without metawatch:
// the same metadata-only server-side apply (cost-center=c), as the same field manager,
// with the same concurrency.
func timeBareClient(ctx context.Context, c client.Client, o options) (time.Duration, error) {
	start := time.Now()
	err := seed.ForEach(ctx, o.pods, o.concurrency, func(i int) error {
		name := seed.Pod(o.namespace, i).Name
		manifest := fmt.Appendf(nil, `{"apiVersion":"v1","kind":"Pod","metadata":{"name":%q,"namespace":%q,"labels":{"cost-center":"c"}}}`, name, o.namespace)
		target := engine.NewObject(corev1.SchemeGroupVersion.WithKind("Pod"))
		target.Namespace, target.Name = o.namespace, name
		return c.Patch(ctx, target, client.RawPatch(types.ApplyPatchType, manifest), client.FieldOwner(engine.FieldManager))
	})
	elapsed := time.Since(start)
	if err != nil {
		return 0, err
	}
	return elapsed, verifyLabel(ctx, c, o, "c")
}
