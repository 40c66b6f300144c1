// Package target is the cluster a benchmark runs against: a kind cluster
// (--kind NAME), any cluster (--kubeconfig or $KUBECONFIG), the local
// one-node cluster (--local-cluster), or, with none of them, the local
// control plane.
package target

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/metawatch/metawatch/hack/onenode"
	"github.com/metawatch/metawatch/pkg/testing/controlplane"
)

// KindConfig is the committed kind cluster configuration, relative to the repository root.
const KindConfig = "bench/kind-config.yaml"

// etcdQuotaBytes is etcd's backend quota on the local control plane: 8 GiB,
// the most etcd recommends and what kind-config.yaml gives. The default 2 GiB
// fills while 300k pods are seeded (each pod is written twice, created and
// then its status, and etcd keeps the old revisions until compaction).
const etcdQuotaBytes = "8589934592"

// apiServerStartTimeout bounds a start of the local kube-apiserver: over a
// million pods it lists them all from etcd into its watch cache first.
const apiServerStartTimeout = 10 * time.Minute

// apiServerMemoryLimit is the local kube-apiserver's GOMEMLIMIT: half of
// this machine's memory. Serving a million pods from its watch cache, it
// grew from 10 GB (the cache) to over 18 GB (what it converts and encodes
// for the list, garbage its GC lets pile up to twice the live heap), and with
// etcd beside it a 24 GiB machine ran out; a soft limit makes its GC collect
// sooner instead. Half leaves etcd and the variant measured the rest.
func apiServerMemoryLimit() string {
	var info syscall.Sysinfo_t
	if err := syscall.Sysinfo(&info); err != nil || info.Totalram == 0 {
		return "off"
	}
	return fmt.Sprintf("%dMiB", info.Totalram*uint64(info.Unit)/2>>20)
}

// Cluster is a benchmark target: a kubeconfig and what stops it (the local control plane).
type Cluster struct {
	Kubeconfig string
	Stop       func()
	// Local is true for the local control plane: its state goes with it.
	Local bool
	// Description says what the cluster is, for the report.
	Description string
	// Pods is where the cluster's pods run, when that is this machine (the
	// one-node cluster of --local-cluster, a kind cluster), nil otherwise:
	// the chart's Deployment can run there.
	Pods PodHost
	// ShardGate, where the harness runs the API server (the local control
	// plane), restarts it with its ShardedListAndWatch feature gate on or
	// off; nil elsewhere.
	ShardGate func(on bool) error
	// ControlPlane is the local control plane (nil elsewhere): the bench
	// writes pods straight into its etcd while its API server is stopped.
	ControlPlane *controlplane.ControlPlane
}

// OpenLocalCluster starts the one-node cluster of `make cluster` (package
// cluster): a real kubelet, so metawatch can also run as users run it, from
// its Helm chart.
func OpenLocalCluster(ctx context.Context) (*Cluster, error) {
	if reason := onenode.CannotRun(); reason != "" {
		return nil, fmt.Errorf("--local-cluster: %s", reason)
	}
	c, err := onenode.Start(ctx, onenode.Options{})
	if err != nil {
		return nil, err
	}
	return &Cluster{Kubeconfig: c.KubeconfigPath, Stop: func() { _ = c.Stop() }, Local: true, Pods: c,
		Description: "the local one-node cluster (make cluster: kube-apiserver, etcd, a kubelet and containerd on this machine)"}, nil
}

// Open returns the target: kind cluster kindName if set, else the external
// kubeconfig if any, else a local control plane it starts.
func Open(ctx context.Context, kindName string) (*Cluster, error) {
	switch {
	case kindName != "":
		return openKind(ctx, kindName)
	case controlplane.ExternalKubeconfig() != "":
		return &Cluster{Kubeconfig: controlplane.ExternalKubeconfig(), Stop: func() {}, Description: "the cluster of --kubeconfig"}, nil
	}
	cp, err := controlplane.Start(ctx, controlplane.Options{ExtraEtcdArgs: map[string]string{"quota-backend-bytes": etcdQuotaBytes},
		StartTimeout: apiServerStartTimeout, APIServerEnv: map[string]string{"GOMEMLIMIT": apiServerMemoryLimit()}})
	if err != nil {
		return nil, err
	}
	shardGate := func(on bool) error {
		return cp.RestartAPIServer(map[string]string{"feature-gates": fmt.Sprintf("ShardedListAndWatch=%t", on)})
	}
	return &Cluster{Kubeconfig: cp.KubeconfigPath, Stop: func() { _ = cp.Stop() }, Local: true, ShardGate: shardGate, ControlPlane: cp,
		Description: "the local control plane (kube-apiserver and etcd on this machine, no nodes)"}, nil
}

func output(ctx context.Context, name string, args ...string) (string, error) {
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), nil
}

func containsLine(s, line string) bool {
	for _, l := range strings.Split(s, "\n") {
		if strings.TrimSpace(l) == line {
			return true
		}
	}
	return false
}
