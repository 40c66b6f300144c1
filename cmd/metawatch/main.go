// Command metawatch watches the metadata of built-in kinds and reports (and,
// with rules, keeps) their labels and annotations. See README.md.
package main

import (
	"context"
	"fmt"
	"os"

	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/metawatch/metawatch/pkg/config"
	"github.com/metawatch/metawatch/pkg/controller"
	"github.com/metawatch/metawatch/pkg/engine"
	"github.com/metawatch/metawatch/pkg/reload"
	"github.com/metawatch/metawatch/pkg/rules"
)

var setupLog = ctrl.Log.WithName("setup")

func main() {
	opts := parseFlags(os.Args[1:])
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&opts.zap)))
	if err := run(ctrl.SetupSignalHandler(), opts); err != nil {
		fmt.Fprintf(os.Stderr, "metawatch: %s\n", describe(err))
		os.Exit(1)
	}
}

// run is the whole story: config → resolved watches → manager → health
// checks → controllers → start. It returns when ctx ends (SIGTERM) or on error.
func run(ctx context.Context, opts options) error {
	conf, err := reload.Load(ctx, restConfig, opts.source)
	if err != nil {
		return fmt.Errorf("invalid configuration: %w", err)
	}
	cfg, err := restConfig()
	if err != nil {
		return err
	}
	cfg.QPS, cfg.Burst = float32(opts.qps), opts.burst
	watches, err := resolveWatches(ctx, cfg, conf)
	if err != nil {
		return err
	}
	mgr, err := engine.NewManager(cfg, watches, opts.engine)
	if err != nil {
		return err
	}
	if err := addHealthChecks(mgr, watches); err != nil {
		return err
	}
	if err := engine.TrackCachedObjects(ctx, mgr.GetCache(), watches); err != nil {
		return err
	}
	rulesByKind, err := rules.Compile(conf)
	if err != nil {
		return err
	}
	if err := controller.Setup(mgr, watches, rulesByKind, opts.controller); err != nil {
		return err
	}
	setupLog.Info("starting", "watches", len(watches), "rules", len(conf.Rules), "dryRun", opts.controller.DryRun)
	return mgr.Start(ctx)
}

// restConfig is the client config from --kubeconfig, $KUBECONFIG or the Pod's service account.
func restConfig() (*rest.Config, error) {
	cfg, err := ctrl.GetConfig()
	if err != nil {
		return nil, fmt.Errorf("loading kubeconfig (set --kubeconfig or $KUBECONFIG): %w", err)
	}
	return cfg, nil
}

// resolveWatches resolves the configuration's kinds against the cluster and
// checks that the API server accepts every watch's list.
func resolveWatches(ctx context.Context, cfg *rest.Config, conf *config.Config) ([]config.ResolvedWatch, error) {
	watches, warnings, err := engine.Resolve(cfg, conf)
	for _, w := range warnings {
		setupLog.Info("warning: " + w)
	}
	if err != nil {
		return nil, fmt.Errorf("invalid configuration: %w", err)
	}
	return watches, engine.Preflight(ctx, cfg, watches)
}

func addHealthChecks(mgr ctrl.Manager, watches []config.ResolvedWatch) error {
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return fmt.Errorf("adding healthz check: %w", err)
	}
	if err := mgr.AddReadyzCheck("informers-synced", engine.SyncedCheck(mgr.GetCache(), watches)); err != nil {
		return fmt.Errorf("adding readyz check: %w", err)
	}
	return nil
}
