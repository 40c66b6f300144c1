package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/metawatch/metawatch/hack/kindnode"
	"github.com/metawatch/metawatch/pkg/testing/controlplane"
)

type options struct {
	name, config string
}

// run is make kind's story: checks, one make kind per machine, the kubectl
// and helm it prints and the kind CLI, what a killed make kind left, the
// container engine, the node image, the cluster; then, once it is stopped or
// deleted, the clean-up, whose failures are errors too.
func run(ctx context.Context, o options) (err error) {
	log := os.Stderr
	fmt.Fprintf(log, "kind: Kubernetes %s, cluster %s from %s\n", controlplane.KubernetesVersion, o.name, o.config)
	if err := kindnode.CanRun(); err != nil {
		return err
	}
	if _, err := os.Stat(o.config); err != nil {
		return fmt.Errorf("--config: %w: give the kind cluster configuration to create it from (the default is bench/kind-config.yaml, from the repository's root)", err)
	}
	release, err := kindnode.LockMachine(o.name)
	if err != nil {
		return err
	}
	defer release()
	start := time.Now()
	tools, err := ensureTools(ctx, log)
	if err != nil {
		return err
	}
	logDir := filepath.Join("bin", "kind")
	if err := removeWhatAKilledRunLeft(ctx, log, tools.kind, logDir); err != nil {
		return err
	}
	var rec runRecord
	engine, err := kindnode.StartEngine(ctx, log, logDir, func(pid int) error {
		rec.Dockerd = identify(pid) // recorded before it is waited for: a kill -9 meanwhile leaves it
		return rec.save()
	})
	if err != nil {
		return errors.Join(err, removeRecord()) // a dockerd that did not start was stopped
	}
	c := cluster{kind: tools.kind, name: o.name, kubeconfig: filepath.Join(logDir, o.name+".kubeconfig"), engineStartedHere: engine.Started}
	defer func() {
		// The cluster first, then the engine under it; the record of both
		// only once they are gone, for the next make kind to finish otherwise.
		cleanUpErr := c.cleanUp(log)
		engine.Stop(log)
		if cleanUpErr == nil {
			cleanUpErr = removeRecord()
		}
		err = errors.Join(err, cleanUpErr)
	}()
	image, err := kindnode.EnsureImage(ctx, log)
	if err != nil {
		return err
	}
	if err := c.prepare(ctx); err != nil {
		return err
	}
	rec.Cluster, rec.MadeNetwork = c.name, c.madeNetwork
	if rec.Kubeconfig, err = filepath.Abs(c.kubeconfig); err != nil { // the next make kind may run in another checkout
		return err
	}
	if err := rec.save(); err != nil {
		return err
	}
	if err := c.create(ctx, image, o.config); err != nil {
		return err
	}
	fmt.Fprintf(log, "kind: cluster %s is up (%s since start), node image %s\n", o.name, time.Since(start).Round(time.Second), image)
	fmt.Fprintf(log, "kind: use it with:  export KUBECONFIG=%s PATH=%s:$PATH\n", c.kubeconfig, tools.path())
	fmt.Fprintf(log, "kind:               kubectl get nodes,pods -A -o wide\n")
	fmt.Fprintf(log, "kind: bench on it:  make bench ARGS=\"--kind %s\"\n", o.name)
	fmt.Fprintf(log, "kind: Ctrl-C (or %s delete cluster --name %s) deletes it\n", tools.kind, o.name)
	return c.waitUntilGone(ctx, engine.Exited())
}

// tools are the cached programs make kind runs or tells users to run.
type tools struct {
	kind, kubectlDir, helm string
}

// ensureTools builds (once, cached by version) the kind CLI, and kubectl
// and helm for the instructions it prints: after the checks, so that a
// user who cannot run kind is told before minutes of building.
func ensureTools(ctx context.Context, log *os.File) (tools, error) {
	cp, err := controlplane.EnsureBinaries(ctx, log)
	if err != nil {
		return tools{}, err
	}
	helm, err := controlplane.EnsureHelm(ctx, log)
	if err != nil {
		return tools{}, err
	}
	kind, err := controlplane.EnsureKind(ctx, log)
	if err != nil {
		return tools{}, err
	}
	return tools{kind: kind, kubectlDir: cp.Dir, helm: helm}, nil
}

// path is the directories of the cached kind, kubectl and helm, for PATH.
func (t tools) path() string {
	return strings.Join([]string{filepath.Dir(t.kind), t.kubectlDir, filepath.Dir(t.helm)}, ":")
}
