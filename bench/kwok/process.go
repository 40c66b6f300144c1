package kwok

import (
	"context"
	_ "embed"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/metawatch/metawatch/pkg/testing/controlplane"
)

// defaultStages are kwok's own node and pod stages (see stages.yaml).
//
//go:embed stages.yaml
var defaultStages string

// leaseSeconds is the simulated nodes' Lease duration, a kubelet's default.
const leaseSeconds = 40

// Kwok is a running kwok process and the nodes it manages.
type Kwok struct {
	client             client.Client
	binary, kubeconfig string
	dir                string // the stages file and kwok's log
	nodes              []string
	cmd                *exec.Cmd
	exited             chan struct{}
	starts             int
}

// Start builds kwok (once, cached by version), creates n simulated nodes
// and starts kwok on them, then waits until they are Ready.
func Start(ctx context.Context, c client.Client, kubeconfig string, n int, log io.Writer) (*Kwok, error) {
	binary, err := controlplane.EnsureKwok(ctx, log)
	if err != nil {
		return nil, err
	}
	nodes, err := createNodes(ctx, c, n)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "metawatch-bench-kwok-")
	if err != nil {
		return nil, err
	}
	k := &Kwok{client: c, binary: binary, kubeconfig: kubeconfig, dir: dir, nodes: nodes}
	if err := k.start(defaultStages); err != nil {
		return nil, err
	}
	if err := k.waitReady(ctx, time.Minute); err != nil {
		_ = k.stop() // keeps the directory: the error names kwok's log in it
		return nil, err
	}
	fmt.Fprintf(log, "kwok: %d simulated nodes Ready (kwok %s, log in %s)\n", n, controlplane.KwokVersion, k.logPath())
	return k, nil
}

// Nodes are the simulated nodes' names.
func (k *Kwok) Nodes() []string { return k.nodes }

func (k *Kwok) logPath() string { return filepath.Join(k.dir, "kwok.log") }

// start writes stages to a new file and starts kwok with it.
func (k *Kwok) start(stages string) error {
	k.starts++
	config := filepath.Join(k.dir, fmt.Sprintf("stages-%d.yaml", k.starts))
	if err := os.WriteFile(config, []byte(stages), 0o600); err != nil {
		return err
	}
	log, err := os.OpenFile(k.logPath(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer log.Close()
	cmd := exec.Command(k.binary, "--kubeconfig", k.kubeconfig, "--config", config,
		"--manage-nodes-with-label-selector", NodeLabel+"=true",
		// kwok renews node Leases only when given their duration (its
		// built-in default applies to kwokctl's config, not to --config
		// files of stages alone); without Leases the nodes go NotReady after
		// the node monitor's grace period, and their pods not Ready.
		"--node-lease-duration-seconds", strconv.Itoa(leaseSeconds), "-v", "WARN")
	cmd.Stdout, cmd.Stderr = log, log
	// kwok goes when the harness does, however it ends.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting kwok: %w", err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	k.cmd, k.exited = cmd, exited
	return nil
}

// restart stops kwok and starts it again with stages. The nodes' Leases
// name the stopped process (kwok's identity is random per process), and a
// kwok manages no node whose Lease another holds until it expires (40 s of
// nothing): they are deleted in between, and the new process takes the
// nodes at once, creating them anew.
func (k *Kwok) restart(ctx context.Context, stages string) error {
	if err := k.stop(); err != nil {
		return err
	}
	for _, n := range k.nodes {
		lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: corev1.NamespaceNodeLease, Name: n}}
		if err := k.client.Delete(ctx, lease); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("deleting the Lease of simulated node %s before restarting kwok: %w", n, err)
		}
	}
	return k.start(stages)
}

// stop ends kwok: SIGTERM, then SIGKILL after 10 s.
func (k *Kwok) stop() error {
	if k.cmd == nil {
		return nil
	}
	select {
	case <-k.exited:
		return fmt.Errorf("kwok had exited: %s (see %s)", k.cmd.ProcessState, k.logPath())
	default:
	}
	_ = k.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-k.exited:
	case <-time.After(10 * time.Second):
		_ = k.cmd.Process.Kill()
		<-k.exited
	}
	k.cmd = nil
	return nil
}

// Stop ends kwok and removes its directory, unless kwok failed: then the
// directory (and kwok's log in it) is kept and the error names it.
func (k *Kwok) Stop() error {
	if err := k.stop(); err != nil {
		return err
	}
	return os.RemoveAll(k.dir)
}
