package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/metawatch/metawatch/hack/kindnode"
	"github.com/metawatch/metawatch/pkg/testing/controlplane"
)

type options struct {
	name, config string
}

// kindNetwork is the container network kind puts its nodes on; kind delete
// cluster leaves it, so the clean-up removes it when it was made here.
const kindNetwork = "kind"

// run is make kind's story: checks, the container engine, the kind CLI, the
// node image, the cluster; then, once it is stopped or deleted, the clean-up.
func run(ctx context.Context, o options) error {
	log := os.Stderr
	if err := kindnode.CanRun(); err != nil {
		return err
	}
	start := time.Now()
	logDir := filepath.Join("bin", "kind")
	engine, err := kindnode.StartEngine(ctx, log, logDir)
	if err != nil {
		return err
	}
	defer engine.Stop(log)
	kind, err := controlplane.EnsureKind(ctx, log)
	if err != nil {
		return err
	}
	image, err := kindnode.EnsureImage(ctx, log)
	if err != nil {
		return err
	}
	c := cluster{kind: kind, name: o.name, kubeconfig: filepath.Join(logDir, o.name+".kubeconfig")}
	defer c.cleanUp(log)
	if err := c.create(ctx, image, o.config); err != nil {
		return err
	}
	fmt.Fprintf(log, "kind: cluster %s is up (%s since start), node image %s\n", o.name, time.Since(start).Round(time.Second), image)
	fmt.Fprintf(log, "kind: use it with:  export KUBECONFIG=%s PATH=%s:$PATH\n", c.kubeconfig, toolPath(ctx, kind))
	fmt.Fprintf(log, "kind:               kubectl get nodes,pods -A -o wide\n")
	fmt.Fprintf(log, "kind: bench on it:  make bench ARGS=\"--kind %s\"\n", o.name)
	fmt.Fprintf(log, "kind: Ctrl-C (or %s delete cluster --name %s) deletes it\n", kind, o.name)
	c.waitUntilGone(ctx)
	return nil
}

// cluster is the kind cluster make kind runs, and what it made for it.
type cluster struct {
	kind, name, kubeconfig string
	// creating: this run creates the cluster, so its clean-up deletes it;
	// madeNetwork: kind's network did not exist before.
	creating, madeNetwork bool
}

func (c *cluster) create(ctx context.Context, image, config string) error {
	exists, err := c.exists(ctx)
	if err != nil {
		return err
	}
	if exists {
		return fmt.Errorf("a kind cluster %s exists already: use it, or delete it first (%s delete cluster --name %s)", c.name, c.kind, c.name)
	}
	c.creating = true
	c.madeNetwork = exec.CommandContext(ctx, "docker", "network", "inspect", kindNetwork).Run() != nil
	if err := os.MkdirAll(filepath.Dir(c.kubeconfig), 0o755); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "kind: creating cluster %s from %s\n", c.name, config)
	cmd := exec.CommandContext(ctx, c.kind, "create", "cluster", "--name", c.name, "--image", image, "--config", config,
		"--kubeconfig", c.kubeconfig, "--wait", "5m")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("kind create cluster: %w", err)
	}
	return nil
}

// exists reports whether kind lists the cluster; an error is kind (or the
// engine) not answering, which says nothing either way.
func (c *cluster) exists(ctx context.Context) (bool, error) {
	out, err := exec.CommandContext(ctx, c.kind, "get", "clusters").Output()
	if err != nil {
		return false, fmt.Errorf("%s get clusters: %w", c.kind, err)
	}
	return slices.Contains(strings.Fields(string(out)), c.name), nil
}

// waitUntilGone returns on Ctrl-C or SIGTERM, or once the cluster was
// deleted by someone else: kind no longer lists it (not when kind fails to
// answer for a moment).
func (c *cluster) waitUntilGone(ctx context.Context) {
	tick := time.NewTicker(3 * time.Second)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			if exists, err := c.exists(ctx); err == nil && !exists {
				fmt.Fprintf(os.Stderr, "kind: cluster %s was deleted\n", c.name)
				return
			}
		}
	}
}

// cleanUp deletes the cluster if it is still there, the network kind made
// for it, and its kubeconfig: on a context of its own, as it runs after Ctrl-C.
func (c *cluster) cleanUp(log *os.File) {
	if !c.creating {
		return // a cluster that was there before is not this run's to delete
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// Deleted unless kind says it is gone: kind delete cluster of a cluster
	// that is not there succeeds.
	if exists, err := c.exists(ctx); err != nil || exists {
		fmt.Fprintf(log, "kind: deleting cluster %s\n", c.name)
		if b, err := exec.CommandContext(ctx, c.kind, "delete", "cluster", "--name", c.name).CombinedOutput(); err != nil {
			fmt.Fprintf(log, "kind: delete cluster %s: %v\n%s", c.name, err, b)
		}
	}
	if c.madeNetwork {
		if b, err := exec.CommandContext(ctx, "docker", "network", "rm", kindNetwork).CombinedOutput(); err != nil {
			fmt.Fprintf(log, "kind: docker network rm %s: %v\n%s", kindNetwork, err, b)
		}
	}
	_ = os.Remove(c.kubeconfig)
}

// toolPath is the directories of the cached kind, kubectl and helm, for PATH.
func toolPath(ctx context.Context, kind string) string {
	dirs := []string{filepath.Dir(kind)}
	if cp, err := controlplane.EnsureBinaries(ctx, io.Discard); err == nil {
		dirs = append(dirs, cp.Dir)
	}
	if helm, err := controlplane.EnsureHelm(ctx, io.Discard); err == nil {
		dirs = append(dirs, filepath.Dir(helm))
	}
	return strings.Join(dirs, ":")
}
