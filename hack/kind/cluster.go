package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/metawatch/metawatch/hack/kindnode"
)

// kindNetwork is the container network kind puts its nodes on; kind delete
// cluster leaves it, so the clean-up removes it when it was made here and
// nothing else is on it.
const kindNetwork = "kind"

// cluster is the kind cluster make kind runs, and what it made for it.
type cluster struct {
	kind, name, kubeconfig string
	// engineStartedHere: the engine under it was started by this run.
	engineStartedHere bool
	// creating: this run creates the cluster, so its clean-up deletes it;
	// madeNetwork: kind's network did not exist before.
	creating, madeNetwork bool
}

// prepare checks the cluster is not there yet, and notes what creating it
// will make.
func (c *cluster) prepare(ctx context.Context) error {
	exists, err := c.exists(ctx)
	if err != nil {
		return err
	}
	if exists && c.engineStartedHere {
		return fmt.Errorf("a kind cluster %s is in the container engine's store already, stopped with the dockerd it ran on (made outside make kind): "+
			"delete it (%s delete cluster --name %s, with dockerd running), or give make kind another --name", c.name, c.kind, c.name)
	}
	if exists {
		return fmt.Errorf("a kind cluster %s exists already: use it, or delete it first (%s delete cluster --name %s)", c.name, c.kind, c.name)
	}
	c.creating = true
	c.madeNetwork = cleanUpCommand(ctx, "docker", "network", "inspect", kindNetwork).Run() != nil
	return nil
}

// create runs kind create cluster, its kubeconfig written to c.kubeconfig.
func (c *cluster) create(ctx context.Context, image, config string) error {
	if err := os.MkdirAll(filepath.Dir(c.kubeconfig), 0o755); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "kind: creating cluster %s from %s\n", c.name, config)
	cmd := kindnode.ChildCommand(ctx, c.kind, "create", "cluster", "--name", c.name, "--image", image, "--config", config,
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
	out, err := cleanUpCommand(ctx, c.kind, "get", "clusters").Output()
	if err != nil {
		return false, fmt.Errorf("%s get clusters: %w%s", c.kind, err, stderrOf(err))
	}
	return slices.Contains(strings.Fields(string(out)), c.name), nil
}

// pollEvery is how often make kind asks kind whether its cluster is still
// there; engineSilence how long kind may fail to answer before make kind
// takes the engine (and the cluster) for gone, rather than running on as if
// it were up. Variables for the tests.
var pollEvery, engineSilence = 3 * time.Second, 30 * time.Second

// waitUntilGone returns nil on Ctrl-C or SIGTERM, or once the cluster was
// deleted by someone else (kind no longer lists it); an error once the
// dockerd this run started has exited, or kind has not answered for
// engineSilence.
func (c *cluster) waitUntilGone(ctx context.Context, engineExited <-chan struct{}) error {
	tick := time.NewTicker(pollEvery)
	defer tick.Stop()
	var silentSince time.Time
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-engineExited:
			return errors.New("the dockerd this run started has exited (its log is bin/kind/dockerd.log): the cluster went with it")
		case <-tick.C:
			exists, err := c.exists(ctx)
			switch {
			case ctx.Err() != nil:
				return nil
			case err == nil && !exists:
				fmt.Fprintf(os.Stderr, "kind: cluster %s was deleted\n", c.name)
				return nil
			case err == nil:
				silentSince = time.Time{}
			case silentSince.IsZero():
				silentSince = time.Now()
			case time.Since(silentSince) >= engineSilence:
				return fmt.Errorf("the container engine has not answered for %s (%w): is dockerd still running?", engineSilence, err)
			}
		}
	}
}

// cleanUp deletes the cluster if it is still there, the network kind made
// for it if nothing else is on it, and its kubeconfig (kept if the cluster
// could not be deleted): on a context of its own, as it runs after Ctrl-C.
func (c *cluster) cleanUp(log *os.File) error {
	if !c.creating {
		return nil // a cluster that was there before is not this run's to delete
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// Deleted unless kind says it is gone: kind delete cluster of a cluster
	// that is not there succeeds.
	if exists, err := c.exists(ctx); err != nil || exists {
		fmt.Fprintf(log, "kind: deleting cluster %s\n", c.name)
		if b, err := cleanUpCommand(ctx, c.kind, "delete", "cluster", "--name", c.name, "--kubeconfig", c.kubeconfig).CombinedOutput(); err != nil {
			return fmt.Errorf("deleting cluster %s: %w\n%s\ndelete it with %s delete cluster --name %s once dockerd runs", c.name, err, b, c.kind, c.name)
		}
	}
	_ = os.Remove(c.kubeconfig)
	if c.madeNetwork {
		return removeNetworkIfUnused(ctx, log)
	}
	return nil
}

// removeNetworkIfUnused removes kind's network unless it is gone already or
// containers of another cluster are on it.
func removeNetworkIfUnused(ctx context.Context, log *os.File) error {
	listed, err := cleanUpCommand(ctx, "docker", "network", "ls", "--quiet", "--filter", "name=^"+kindNetwork+"$").Output()
	if err != nil {
		return fmt.Errorf("docker network ls: %w", err)
	}
	if len(strings.TrimSpace(string(listed))) == 0 {
		return nil // kind never made it (kind create cluster failed first)
	}
	out, err := cleanUpCommand(ctx, "docker", "network", "inspect", kindNetwork, "--format", "{{len .Containers}}").Output()
	if err != nil {
		return fmt.Errorf("docker network inspect %s: %w", kindNetwork, err)
	}
	if n, _ := strconv.Atoi(strings.TrimSpace(string(out))); n > 0 {
		fmt.Fprintf(log, "kind: leaving the %s network: %d other containers are on it\n", kindNetwork, n)
		return nil
	}
	if b, err := cleanUpCommand(ctx, "docker", "network", "rm", kindNetwork).CombinedOutput(); err != nil {
		return fmt.Errorf("docker network rm %s: %w\n%s", kindNetwork, err, b)
	}
	return nil
}

// cleanUpCommand is a command of make kind's checks and clean-up, in a
// process group of its own: a second Ctrl-C in the terminal must not kill
// the kind delete cluster the first one started.
func cleanUpCommand(ctx context.Context, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	return cmd
}

// stderrOf is what a failed command wrote to its standard error, after a
// colon, or "".
func stderrOf(err error) string {
	var exit *exec.ExitError
	if errors.As(err, &exit) && len(bytes.TrimSpace(exit.Stderr)) > 0 {
		return ": " + string(bytes.TrimSpace(exit.Stderr))
	}
	return ""
}
