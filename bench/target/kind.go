package target

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/metawatch/metawatch/hack/kindnode"
	"github.com/metawatch/metawatch/hack/onenode"
	"github.com/metawatch/metawatch/pkg/testing/controlplane"
)

// PodHost is a cluster whose pods run on this machine: an image is loaded
// into it without a registry, and a pod's address is reached from inside its
// network, as from its node.
type PodHost interface {
	ImportImage(ctx context.Context, tarball string) error
	HTTPClient() *http.Client
}

// openKind reuses kind cluster name, or creates it from KindConfig with the
// node image built on this machine (hack/kindnode: there is no registry to
// pull kind's own from), and writes its kubeconfig.
func openKind(ctx context.Context, name string) (*Cluster, error) {
	if !kindnode.EngineAnswers(ctx) {
		return nil, fmt.Errorf("--kind needs a running container engine (`docker info` must work): "+
			"`make kind ARGS=\"--name %s\"` installs and starts one, builds the node image and creates the cluster; "+
			"without one use --kubeconfig PATH, or neither flag for the local control plane", name)
	}
	kind, err := controlplane.EnsureKind(ctx, os.Stderr)
	if err != nil {
		return nil, err
	}
	existing, err := output(ctx, kind, "get", "clusters")
	if err != nil {
		return nil, err
	}
	path := filepath.Join(os.TempDir(), "metawatch-bench-kind-"+name+".kubeconfig")
	if !containsLine(existing, name) {
		// make kind stops the dockerd it started when it ends: a cluster
		// made on it here would stop with it, and be left in its store.
		if pid, itsCluster, ok := kindnode.RunningMakeKind(); ok {
			return nil, fmt.Errorf("--kind %s: there is no such cluster, and make kind (pid %s) is running cluster %s on this machine: "+
				"use --kind %s, or stop make kind and run make kind ARGS=\"--name %s\"", name, pid, itsCluster, itsCluster, name)
		}
		image, err := kindnode.EnsureImage(ctx, os.Stderr)
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(os.Stderr, "target: creating kind cluster %s from %s (it is kept: %s delete cluster --name %s)\n", name, KindConfig, kind, name)
		// Its kubeconfig goes to a file of the bench's, not into $KUBECONFIG or ~/.kube/config.
		if _, err := output(ctx, kind, "create", "cluster", "--name", name, "--image", image, "--config", KindConfig, "--wait", "5m",
			"--kubeconfig", path); err != nil {
			return nil, err
		}
	}
	kubeconfig, err := output(ctx, kind, "get", "kubeconfig", "--name", name)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(path, []byte(kubeconfig), 0o600); err != nil {
		return nil, err
	}
	return &Cluster{Kubeconfig: path, Stop: func() { _ = os.Remove(path) }, Pods: kindHost{kind: kind, name: name},
		Description: "kind cluster " + name + " from " + KindConfig + " (node image " + kindnode.Image() + ", built here)"}, nil
}

// kindHost is a kind cluster of one node, as a PodHost.
type kindHost struct{ kind, name string }

// ImportImage is `kind load image-archive`, as users load a locally built image.
func (k kindHost) ImportImage(ctx context.Context, tarball string) error {
	_, err := output(ctx, k.kind, "load", "image-archive", tarball, "--name", k.name)
	return err
}

// HTTPClient connects from inside the node container's network namespace,
// where pod addresses route (the machine itself has no route to them).
func (k kindHost) HTTPClient() *http.Client {
	node := k.name + "-control-plane"
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		pid, err := output(ctx, "docker", "inspect", "--format", "{{.State.Pid}}", node)
		if err != nil {
			return nil, err
		}
		return onenode.DialInNamespace(ctx, "/proc/"+strings.TrimSpace(pid)+"/ns/net", network, addr)
	}
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DialContext: dial,
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
}
