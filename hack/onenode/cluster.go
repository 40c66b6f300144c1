package onenode

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/metawatch/metawatch/pkg/testing/controlplane"
)

// Cluster is a running one-node cluster.
type Cluster struct {
	// KubeconfigPath is an admin kubeconfig; its server is the API server's
	// address inside the cluster's network namespace, reachable from the host.
	KubeconfigPath string
	// Config is the same admin client config.
	Config *rest.Config
	// Kubectl is the kubectl binary of the control plane's version.
	Kubectl string

	layout    layout
	log       io.Writer
	client    kubernetes.Interface // the admin client readiness is polled with
	processes []*process           // in start order
	hostDirs  []string             // host directories the node's components create, absent before Start
}

// Options tune Start.
type Options struct {
	// Log receives progress; defaults to os.Stderr.
	Log io.Writer
}

// Start builds what is missing (once, cached by version), installs the
// Debian packages the node needs, and starts a one-node cluster in its own
// network namespace. Call Stop to stop it and remove everything it made.
func Start(ctx context.Context, opts Options) (_ *Cluster, err error) {
	if opts.Log == nil {
		opts.Log = os.Stderr
	}
	if err := checkHost(); err != nil {
		return nil, err
	}
	if err := installPackages(ctx, opts.Log); err != nil {
		return nil, err
	}
	bins, err := controlplane.EnsureBinaries(ctx, opts.Log)
	if err != nil {
		return nil, err
	}
	nodeDir, err := controlplane.EnsureNodeBinaries(ctx, opts.Log)
	if err != nil {
		return nil, err
	}
	c := &Cluster{layout: defaultLayout(), log: opts.Log, Kubectl: bins.Kubectl, KubeconfigPath: defaultLayout().kubeconfigPath()}
	_ = c.cleanup() // what a killed earlier run left
	c.hostDirs = newHostDirs()
	defer func() {
		if err != nil {
			err = errors.Join(err, c.Stop()) // remove what the failed start made
		}
	}()
	if err := c.prepare(); err != nil {
		return nil, err
	}
	c.say("creating network namespace %s (node %s, API server https://%s:%d)", netnsName, nodeIP, nodeIP, apiPort)
	if err := createNetwork(ctx); err != nil {
		return nil, err
	}
	if err := c.startControlPlane(ctx, bins, nodeDir); err != nil {
		return nil, err
	}
	if err := c.startNode(ctx, nodeDir); err != nil {
		return nil, err
	}
	return c, nil
}

func (c *Cluster) say(format string, args ...any) {
	fmt.Fprintf(c.log, "cluster: "+format+"\n", args...)
}

// prepare writes the certificates, the kubeconfig and every component's configuration.
func (c *Cluster) prepare() error {
	l := c.layout
	for _, dir := range []string{l.data, l.runDir, l.path("logs"), l.path("cni"), l.path("etcd"), l.path("kubelet"), l.path("pods-logs")} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	if err := l.pki().generate([]net.IP{net.ParseIP(nodeIP), net.ParseIP(serviceIP), net.ParseIP("127.0.0.1")}); err != nil {
		return fmt.Errorf("generating certificates: %w", err)
	}
	kubeconfig, err := l.pki().kubeconfig(fmt.Sprintf("https://%s:%d", nodeIP, apiPort))
	if err != nil {
		return err
	}
	files := map[string]string{
		l.kubeconfigPath():                             string(kubeconfig),
		l.path("containerd.toml"):                      l.containerdConfig(),
		l.path("cni", "10-metawatch-cluster.conflist"): cniConfig(),
		l.path("kubelet.yaml"):                         l.kubeletConfig(),
		l.path("kube-proxy.yaml"):                      l.kubeProxyConfig(),
		l.path("audit-policy.yaml"):                    auditPolicy,
		l.path("resolv.conf"):                          "# no nameserver: nothing in the cluster resolves names outside it\n",
	}
	for path, content := range files {
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			return err
		}
	}
	if c.Config, err = clientcmd.RESTConfigFromKubeConfig(kubeconfig); err != nil {
		return err
	}
	c.client, err = kubernetes.NewForConfig(c.Config)
	return err
}

func (c *Cluster) start(name, binary string, args ...string) error {
	p, err := startProcess(c.layout, name, binary, args...)
	if err != nil {
		return err
	}
	c.processes = append(c.processes, p)
	return nil
}

func (c *Cluster) startControlPlane(ctx context.Context, bins controlplane.Binaries, nodeDir string) error {
	l, p := c.layout, c.layout.pki()
	c.say("starting etcd and kube-apiserver %s", controlplane.KubernetesVersion)
	if err := c.start("etcd", bins.Etcd, "--data-dir", l.path("etcd"), "--listen-client-urls", "http://127.0.0.1:2379",
		"--advertise-client-urls", "http://127.0.0.1:2379", "--listen-peer-urls", "http://127.0.0.1:2380", "--unsafe-no-fsync"); err != nil {
		return err
	}
	if err := c.start("kube-apiserver", bins.KubeAPIServer,
		"--etcd-servers", "http://127.0.0.1:2379", "--bind-address", "0.0.0.0", "--secure-port", strconv.Itoa(apiPort),
		"--advertise-address", nodeIP, "--tls-cert-file", p.path("apiserver.crt"), "--tls-private-key-file", p.path("apiserver.key"),
		"--client-ca-file", p.path("ca.crt"), "--kubelet-client-certificate", p.path("admin.crt"), "--kubelet-client-key", p.path("admin.key"),
		"--service-account-issuer", "https://kubernetes.default.svc.cluster.local", "--service-account-key-file", p.path("sa.pub"),
		"--service-account-signing-key-file", p.path("sa.key"), "--service-cluster-ip-range", serviceCIDR,
		"--authorization-mode", "Node,RBAC", "--kubelet-preferred-address-types", "InternalIP",
		"--audit-policy-file", l.path("audit-policy.yaml"), "--audit-log-path", c.AuditLogPath(), "--audit-log-format", "json", "--allow-privileged", "--feature-gates", controlplane.FeatureGates); err != nil {
		return err
	}
	if err := c.waitFor(ctx, "the API server to be ready", 90*time.Second, c.apiServerReady); err != nil {
		return err
	}
	c.say("starting kube-controller-manager and kube-scheduler")
	if err := c.start("kube-controller-manager", filepath.Join(nodeDir, "kube-controller-manager"), "--kubeconfig", l.kubeconfigPath(),
		"--service-account-private-key-file", p.path("sa.key"), "--root-ca-file", p.path("ca.crt"), "--leader-elect=false",
		"--bind-address", "127.0.0.1", "--use-service-account-credentials"); err != nil {
		return err
	}
	return c.start("kube-scheduler", filepath.Join(nodeDir, "kube-scheduler"), "--kubeconfig", l.kubeconfigPath(),
		"--leader-elect=false", "--bind-address", "127.0.0.1")
}

func (c *Cluster) startNode(ctx context.Context, nodeDir string) error {
	l := c.layout
	c.say("starting containerd and importing the pause image")
	if err := c.start("containerd", "containerd", "--config", l.path("containerd.toml")); err != nil {
		return err
	}
	if err := c.waitFor(ctx, "containerd's socket", 30*time.Second, func(context.Context) error {
		_, err := os.Stat(l.containerdSocket())
		return err
	}); err != nil {
		return err
	}
	pause, err := buildPauseImage(ctx, l.path())
	if err != nil {
		return err
	}
	if err := c.ImportImage(ctx, pause); err != nil {
		return err
	}
	c.say("starting kubelet and kube-proxy")
	if err := c.start("kubelet", filepath.Join(nodeDir, "kubelet"), "--config", l.path("kubelet.yaml"), "--kubeconfig", l.kubeconfigPath(),
		"--root-dir", l.path("kubelet"), "--cert-dir", l.path("kubelet", "pki"), "--hostname-override", nodeName, "--node-ip", nodeIP); err != nil {
		return err
	}
	if err := c.start("kube-proxy", filepath.Join(nodeDir, "kube-proxy"), "--config", l.path("kube-proxy.yaml")); err != nil {
		return err
	}
	return c.waitFor(ctx, "node "+nodeName+" to be Ready", 2*time.Minute, c.nodeReady)
}

// AuditLogPath is the API server's audit log (JSON lines): every write by a
// ServiceAccount, at level Metadata (who, from which address, what, when).
func (c *Cluster) AuditLogPath() string { return c.layout.path("logs", "audit.log") }

// ImportImage imports an OCI or Docker image tarball into the node's
// containerd, for pods with imagePullPolicy: Never (there is no registry).
func (c *Cluster) ImportImage(ctx context.Context, tarball string) error {
	out, err := exec.CommandContext(ctx, "ctr", "--address", c.layout.containerdSocket(), "-n", "k8s.io",
		"images", "import", "--no-unpack", tarball).CombinedOutput()
	if err != nil {
		return fmt.Errorf("importing %s into the node: %w\n%s", tarball, err, out)
	}
	return nil
}

func (c *Cluster) apiServerReady(ctx context.Context) error {
	return c.client.Discovery().RESTClient().Get().AbsPath("/readyz").Do(ctx).Error()
}

func (c *Cluster) nodeReady(ctx context.Context) error {
	node, err := c.client.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{})
	if err != nil {
		return err
	}
	for _, cond := range node.Status.Conditions {
		if cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue {
			return nil
		}
	}
	return errors.New("not Ready yet")
}

// waitFor polls check until it passes, ctx ends, timeout passes, or a
// component exits (its log is named).
func (c *Cluster) waitFor(ctx context.Context, what string, timeout time.Duration, check func(context.Context) error) error {
	deadline := time.Now().Add(timeout)
	var last error
	for time.Now().Before(deadline) {
		for _, p := range c.processes {
			if ended, err := p.exited(); ended {
				return fmt.Errorf("%s exited while waiting for %s (see %s): %w", p.name, what, c.layout.logPath(p.name), err)
			}
		}
		callCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
		last = check(callCtx)
		cancel()
		if last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
	return fmt.Errorf("timed out after %s waiting for %s: %w", timeout, what, last)
}
