package kindnode

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/metawatch/metawatch/hack/onenode"
	"github.com/metawatch/metawatch/pkg/testing/controlplane"
)

// crictlVersion is the crictl kind's base image of controlplane.KindVersion
// installs (its images/base/Dockerfile); `kind load` runs it on the node.
const crictlVersion = "v1.36.0"

// localPathProvisionerVersion is the rancher/local-path-provisioner release
// the node's storage provisioner is built from. kind's image of
// controlplane.KindVersion is v0.0.34 (its images/local-path-provisioner/
// Makefile); the module proxy here serves v0.0.30 only, which runs kind's
// manifest the same (the same flags and configuration).
const localPathProvisionerVersion = "v0.0.30"

// The images built here in place of kind's own carry names of their own, and
// kind's manifests are rewritten to them (nodeImages): a name of kind's on a
// different program would say it is kind's.
var (
	kindnetImage   = "metawatch.local/kindnet:" + controlplane.KubernetesVersion
	provisionerRef = "metawatch.local/local-path-provisioner:" + localPathProvisionerVersion
	helperImage    = "metawatch.local/local-path-helper:" + debianSuite
)

func kindVersion() string { return controlplane.KindVersion }

// bits are the built programs a node image holds: on the node itself, and in
// each image by the name kubeadm or kind's manifests give it.
type bits struct {
	kubeadm, kubelet, kubectl, crictl string
	images                            []imageSpec
}

// buildBits builds (or finds cached) every program of the node image, and
// names each image as kubeadm's list does, or as the manifests the node gets
// (nodeManifests) do.
func buildBits(ctx context.Context, log io.Writer, work string) (bits, error) {
	kubeadm, err := controlplane.EnsureKubeadm(ctx, log)
	if err != nil {
		return bits{}, err
	}
	required, err := kubeadmImages(ctx, kubeadm)
	if err != nil {
		return bits{}, err
	}
	cp, err := controlplane.EnsureBinaries(ctx, log)
	if err != nil {
		return bits{}, err
	}
	nodeDir, err := controlplane.EnsureNodeBinaries(ctx, log)
	if err != nil {
		return bits{}, err
	}
	b := bits{kubeadm: kubeadm, kubelet: filepath.Join(nodeDir, "kubelet"), kubectl: cp.Kubectl}
	if b.crictl, err = controlplane.EnsureGoTool(ctx, log, "crictl-"+crictlVersion, controlplane.GoTool{
		Name: "crictl", Module: "sigs.k8s.io/cri-tools", Version: crictlVersion, Package: "sigs.k8s.io/cri-tools/cmd/crictl",
	}); err != nil {
		return bits{}, err
	}
	for _, component := range []string{"kube-apiserver", "kube-controller-manager", "kube-scheduler", "kube-proxy"} {
		dir := nodeDir
		if component == "kube-apiserver" {
			dir = cp.Dir
		}
		b.images = append(b.images, imageSpec{ref: required[component], files: map[string]string{"usr/local/bin/" + component: filepath.Join(dir, component)}})
	}
	more, err := buildAddOnImages(ctx, log, work, required)
	if err != nil {
		return bits{}, err
	}
	b.images = append(b.images, more...)
	return b, nil
}

// buildAddOnImages are the images that are not Kubernetes components: etcd
// and CoreDNS at the versions kubeadm names, the sandbox, the pod network
// (kindnet) and the local-path provisioner and its helper.
func buildAddOnImages(ctx context.Context, log io.Writer, work string, required map[string]string) ([]imageSpec, error) {
	etcdVersion := "v" + strings.TrimSuffix(tagOf(required["etcd"]), "-0")
	etcd, err := controlplane.EnsureGoTool(ctx, log, "etcd-"+etcdVersion, controlplane.GoTool{
		Name: "etcd", Module: "go.etcd.io/etcd/server/v3", Version: etcdVersion, Package: "go.etcd.io/etcd/server/v3",
		VersionArgs: []string{"--version"}, VersionWant: "etcd Version: " + etcdVersion[1:],
	})
	if err != nil {
		return nil, err
	}
	corednsVersion := tagOf(required["coredns"])
	coredns, err := controlplane.EnsureGoTool(ctx, log, "coredns-"+corednsVersion, controlplane.GoTool{
		Name: "coredns", Module: "github.com/coredns/coredns", Version: corednsVersion, Package: "github.com/coredns/coredns",
		VersionArgs: []string{"-version"}, VersionWant: "CoreDNS-" + strings.TrimPrefix(corednsVersion, "v"),
	})
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(log, "kindnode: building kindnet, the node's pod network (hack/kindnode/kindnet; a minute or two the first time)\n")
	kindnet, err := buildKindnet(ctx, work)
	if err != nil {
		return nil, err
	}
	provisioner, err := controlplane.EnsureGoTool(ctx, log, "local-path-provisioner-"+localPathProvisionerVersion, controlplane.GoTool{
		Name: "local-path-provisioner", Module: "github.com/rancher/local-path-provisioner", Version: localPathProvisionerVersion,
		Package: "github.com/rancher/local-path-provisioner",
	})
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(log, "kindnode: building the sandbox (pause) program\n")
	pause, err := onenode.BuildPause(ctx, work)
	if err != nil {
		return nil, err
	}
	return []imageSpec{
		{ref: required["etcd"], files: map[string]string{"usr/local/bin/etcd": etcd}},
		{ref: required["coredns"], files: map[string]string{"coredns": coredns}, entrypoint: []string{"/coredns"}},
		// The sandbox is the one-node cluster's pause program, under its name
		// there: containerd's configuration names it (adaptToDebian).
		{ref: onenode.PauseImage, files: map[string]string{"pause": pause}, entrypoint: []string{"/pause"}},
		{ref: kindnetImage, files: map[string]string{"bin/kindnet": kindnet}, cmd: []string{"/bin/kindnet"}},
		{ref: provisionerRef, files: map[string]string{"usr/local/bin/local-path-provisioner": provisioner}, entrypoint: []string{"/usr/local/bin/local-path-provisioner"}},
		// The helper runs kind's setup and teardown scripts: sh, mkdir and rm, all in the Debian layer.
		{ref: helperImage},
	}, nil
}

// kubeadmImages is `kubeadm config images list` for the project's version,
// by the last element of each image's repository (kube-apiserver, etcd,
// coredns, pause, ...).
func kubeadmImages(ctx context.Context, kubeadm string) (map[string]string, error) {
	out, err := exec.CommandContext(ctx, kubeadm, "config", "images", "list", "--kubernetes-version", controlplane.KubernetesVersion).Output()
	if err != nil {
		return nil, fmt.Errorf("kubeadm config images list: %w", stderrOf(err))
	}
	images := map[string]string{}
	for _, ref := range strings.Fields(string(out)) {
		repo, _, _ := strings.Cut(ref[strings.LastIndex(ref, "/")+1:], ":")
		images[repo] = ref
	}
	for _, want := range []string{"kube-apiserver", "kube-controller-manager", "kube-scheduler", "kube-proxy", "etcd", "coredns", "pause"} {
		if images[want] == "" {
			return nil, fmt.Errorf("kubeadm %s names no %s image (it listed %s); the recipe in hack/kindnode needs updating", controlplane.KubernetesVersion, want, out)
		}
	}
	return images, nil
}

func tagOf(ref string) string { return ref[strings.LastIndex(ref, ":")+1:] }

// stderrOf adds what a command that failed wrote to its standard error.
func stderrOf(err error) error {
	var exit *exec.ExitError
	if errors.As(err, &exit) && len(exit.Stderr) > 0 {
		return fmt.Errorf("%w: %s", err, strings.TrimSpace(string(exit.Stderr)))
	}
	return err
}

// writeFile writes data to path, making its directory.
func writeFile(path string, data []byte, mode os.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, data, mode)
}

// buildKindnet compiles the node's pod network program (package kindnet of
// this module), static, under work.
func buildKindnet(ctx context.Context, work string) (string, error) {
	bin := filepath.Join(work, "kindnet")
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-o", bin, "github.com/metawatch/metawatch/hack/kindnode/kindnet")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building kindnet: %w\n%s", err, out)
	}
	return bin, nil
}

// nodeManifests are kind's CNI and storage manifests with kind's image names
// replaced by the images built here in their place.
func nodeManifests(kind kindSource) (cni, storage string) {
	cni = strings.ReplaceAll(kind.cniManifest, kind.kindnetdImage, kindnetImage)
	storage = strings.ReplaceAll(kind.storageManifest, kind.provisionerImage, provisionerRef)
	return cni, strings.ReplaceAll(storage, kind.helperImage, helperImage)
}
