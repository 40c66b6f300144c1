package controlplane

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// ControlPlane is a running local etcd + kube-apiserver.
type ControlPlane struct {
	// Config is an admin (system:masters) client config.
	Config *rest.Config
	// KubeconfigPath is an admin kubeconfig file for kubectl and the metawatch binary.
	KubeconfigPath string
	// Binaries are the binaries it runs; Binaries.Kubectl drives it from tests and `make run`.
	Binaries Binaries

	env      *envtest.Environment
	tempDir  string
	certDir  string
	existing bool // USE_EXISTING_CLUSTER: nothing to stop
	// controllerManager is set while a test's kube-controller-manager runs (one at a time).
	controllerManager atomic.Bool
}

// Options tune Start. The zero value is fine.
type Options struct {
	// Log receives build progress; defaults to os.Stderr.
	Log io.Writer
	// KubeconfigPath is where to write the admin kubeconfig; defaults to a temp file.
	KubeconfigPath string
	// ExtraAPIServerArgs are appended to the kube-apiserver flags.
	ExtraAPIServerArgs map[string]string
	// ExtraEtcdArgs are appended to the etcd flags (the bench's 300k pods
	// need more than etcd's default 2 GiB quota, see bench/README.md).
	ExtraEtcdArgs map[string]string
	// APIServerEnv is added to kube-apiserver's environment, e.g. GOMEMLIMIT
	// (the bench's million pods). It inherits this process's otherwise.
	APIServerEnv map[string]string
	// StartTimeout bounds each start of kube-apiserver and etcd; defaults to
	// 90 s. An API server over a million stored objects needs longer.
	StartTimeout time.Duration
}

// Start builds the binaries if needed and starts etcd and kube-apiserver.
// Call Stop to shut both down and remove their data.
//
// It honours envtest's variables: KUBEBUILDER_ASSETS, a directory holding
// kube-apiserver, etcd and kubectl (setup-envtest's), is used instead of the
// cached build; USE_EXISTING_CLUSTER=true starts nothing and returns the
// cluster of --kubeconfig, $KUBECONFIG or ~/.kube/config (kubectl still comes
// from the binaries). The local kube-apiserver runs with FeatureGates, so
// assets older than KubernetesVersion may not start.
func Start(ctx context.Context, opts Options) (*ControlPlane, error) {
	if opts.Log == nil {
		opts.Log = os.Stderr
	}
	bins, err := binaries(ctx, opts.Log)
	if err != nil {
		return nil, err
	}
	if os.Getenv("USE_EXISTING_CLUSTER") == "true" {
		return existingCluster(bins)
	}
	// A certificate directory of our own (envtest would use a random one per
	// start) keeps the serving certificates across RestartAPIServer.
	certDir, err := os.MkdirTemp("", "metawatch-apiserver-certs-")
	if err != nil {
		return nil, err
	}
	env := newEnvironment(bins, opts)
	env.ControlPlane.GetAPIServer().CertDir = certDir
	if len(opts.APIServerEnv) > 0 {
		// envtest starts the binary with this process's environment only: a
		// script that sets the rest and execs it (same pid, so stops work).
		wrapper, err := writeEnvWrapper(certDir, bins.KubeAPIServer, opts.APIServerEnv)
		if err != nil {
			os.RemoveAll(certDir)
			return nil, err
		}
		env.ControlPlane.GetAPIServer().Path = wrapper
	}
	cfg, err := env.Start()
	if err != nil {
		os.RemoveAll(certDir)
		return nil, fmt.Errorf("starting kube-apiserver %s and etcd %s: %w", KubernetesVersion, EtcdVersion, err)
	}
	cp := &ControlPlane{Config: cfg, Binaries: bins, env: env, certDir: certDir}
	if err := cp.writeKubeconfig(opts.KubeconfigPath); err != nil {
		_ = cp.Stop()
		return nil, err
	}
	return cp, nil
}

func newEnvironment(bins Binaries, opts Options) *envtest.Environment {
	if opts.StartTimeout == 0 {
		opts.StartTimeout = 90 * time.Second
	}
	env := &envtest.Environment{
		BinaryAssetsDirectory:    bins.Dir,
		ControlPlaneStartTimeout: opts.StartTimeout,
		ControlPlaneStopTimeout:  10 * time.Second,
	}
	env.ControlPlane.GetAPIServer().Path = bins.KubeAPIServer
	env.ControlPlane.Etcd = &envtest.Etcd{Path: bins.Etcd}
	env.ControlPlane.KubectlPath = bins.Kubectl
	args := env.ControlPlane.GetAPIServer().Configure()
	if FeatureGates != "" {
		args.Append("feature-gates", FeatureGates)
	}
	for k, v := range opts.ExtraAPIServerArgs {
		args.Set(k, v)
	}
	etcdArgs := env.ControlPlane.Etcd.Configure()
	for k, v := range opts.ExtraEtcdArgs {
		etcdArgs.Set(k, v)
	}
	return env
}

// writeEnvWrapper writes dir/kube-apiserver, a script that runs binary with env added.
func writeEnvWrapper(dir, binary string, env map[string]string) (string, error) {
	var script strings.Builder
	script.WriteString("#!/bin/sh\n")
	for _, k := range slices.Sorted(maps.Keys(env)) {
		fmt.Fprintf(&script, "export %s=%s\n", k, shellQuote(env[k]))
	}
	fmt.Fprintf(&script, "exec %s \"$@\"\n", shellQuote(binary))
	path := filepath.Join(dir, "kube-apiserver")
	if err := os.WriteFile(path, []byte(script.String()), 0o700); err != nil {
		return "", fmt.Errorf("writing the kube-apiserver wrapper: %w", err)
	}
	return path, nil
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

func (cp *ControlPlane) writeKubeconfig(path string) error {
	if path == "" {
		dir, err := os.MkdirTemp("", "metawatch-controlplane-")
		if err != nil {
			return err
		}
		cp.tempDir = dir
		path = filepath.Join(dir, "kubeconfig")
	}
	if err := WriteFileAtomic(path, cp.env.KubeConfig, 0o600); err != nil {
		return fmt.Errorf("writing kubeconfig %s: %w", path, err)
	}
	cp.KubeconfigPath = path
	return nil
}

// Stop shuts down kube-apiserver and etcd and removes their data.
func (cp *ControlPlane) Stop() error {
	if cp.existing {
		return nil
	}
	err := cp.env.Stop()
	if cp.tempDir != "" {
		_ = os.RemoveAll(cp.tempDir)
	}
	_ = os.RemoveAll(cp.certDir)
	return err
}

// EtcdURL is the client URL of the control plane's etcd ("" for an existing
// cluster): the bench writes objects straight into it while kube-apiserver is
// stopped.
func (cp *ControlPlane) EtcdURL() string {
	if cp.existing {
		return ""
	}
	return cp.env.ControlPlane.Etcd.URL.String()
}

// StopAPIServer stops kube-apiserver (etcd keeps running, with the data).
// While clients hold watches open, kube-apiserver may not finish its graceful
// shutdown before the stop timeout; envtest then kills it, which is a stop too.
func (cp *ControlPlane) StopAPIServer() error {
	if cp.existing {
		return errExisting
	}
	err := cp.env.ControlPlane.GetAPIServer().Stop()
	if err != nil && strings.Contains(err.Error(), "timeout waiting for process kube-apiserver to stop") {
		return nil
	}
	return err
}

// StartAPIServer starts a stopped kube-apiserver again, on the same address
// with the same certificates, so existing clients can reconnect.
func (cp *ControlPlane) StartAPIServer() error {
	if cp.existing {
		return errExisting
	}
	return cp.env.ControlPlane.GetAPIServer().Start()
}

// RestartAPIServer stops kube-apiserver and starts it again with args set
// (e.g. "feature-gates"), on the same etcd, address and certificates: the
// same objects behind an API server configured otherwise.
func (cp *ControlPlane) RestartAPIServer(args map[string]string) error {
	if err := cp.StopAPIServer(); err != nil {
		return err
	}
	configured := cp.env.ControlPlane.GetAPIServer().Configure()
	for k, v := range args {
		configured.Set(k, v)
	}
	return cp.StartAPIServer()
}

var errExisting = errors.New("an existing cluster (USE_EXISTING_CLUSTER) is not stopped or started by the tests")

// binaries are $KUBEBUILDER_ASSETS's, as envtest users expect, else the cached build.
func binaries(ctx context.Context, log io.Writer) (Binaries, error) {
	dir := os.Getenv("KUBEBUILDER_ASSETS")
	if dir == "" {
		return EnsureBinaries(ctx, log)
	}
	b := Binaries{Dir: dir, KubeAPIServer: filepath.Join(dir, "kube-apiserver"), Etcd: filepath.Join(dir, "etcd"), Kubectl: filepath.Join(dir, "kubectl")}
	for _, path := range []string{b.KubeAPIServer, b.Etcd, b.Kubectl} {
		if _, err := os.Stat(path); err != nil {
			return Binaries{}, fmt.Errorf("KUBEBUILDER_ASSETS=%s has no %s: put kube-apiserver, etcd and kubectl (%s or later) there, or unset it to build them (make controlplane)",
				dir, filepath.Base(path), KubernetesVersion)
		}
	}
	fmt.Fprintf(log, "controlplane: using the binaries in KUBEBUILDER_ASSETS=%s\n", dir)
	return b, nil
}

// existingCluster is the cluster of the kubeconfig given (USE_EXISTING_CLUSTER=true).
func existingCluster(bins Binaries) (*ControlPlane, error) {
	path := ExternalKubeconfig()
	if path == "" {
		path = clientcmd.RecommendedHomeFile
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		return nil, fmt.Errorf("USE_EXISTING_CLUSTER=true: loading the kubeconfig %s (set KUBECONFIG): %w", path, err)
	}
	return &ControlPlane{Config: cfg, KubeconfigPath: path, Binaries: bins, existing: true}, nil
}
