package controlplane

import (
	"fmt"
	"os"
	"regexp"
	"strconv"
)

// VersionEnv names the environment variable that picks the Kubernetes release
// the local control plane is built from and started at (`make test-versions`
// sets it per run); unset, it is DefaultKubernetesVersion.
const VersionEnv = "METAWATCH_KUBERNETES_VERSION"

// DefaultKubernetesVersion is the release `make run`, `make test` and the
// bench use when VersionEnv is unset.
const DefaultKubernetesVersion = "v1.37.2"

// EtcdVersion is the go.etcd.io/etcd/server/v3 release etcd is built from
// (every supported Kubernetes minor runs on etcd 3.6).
const EtcdVersion = "v3.6.16"

var (
	// KubernetesVersion is the k8s.io/kubernetes release kube-apiserver and kubectl are built from.
	KubernetesVersion = selected.version
	// KubernetesMinor is KubernetesVersion's minor version (37 for v1.37.2).
	KubernetesMinor = selected.minor
	// StagingVersion is the published version of the k8s.io/* staging modules of KubernetesVersion.
	StagingVersion = selected.staging
	// FeatureGates are switched on in every local kube-apiserver: only gates
	// the version knows, since kube-apiserver refuses to start on an unknown one.
	FeatureGates = featureGatesOf(selected.minor)
)

var selected = selectVersion(os.Getenv(VersionEnv))

// release is a Kubernetes version as the build and the start need it.
type release struct {
	version, staging string
	minor            int
	// err says why $METAWATCH_KUBERNETES_VERSION cannot be used; CacheDir returns it.
	err error
}

var releasePattern = regexp.MustCompile(`^v1\.([0-9]+)\.([0-9]+)$`)

// selectVersion reads a version like v1.35.4 from VersionEnv.
func selectVersion(v string) release {
	if v == "" {
		v = DefaultKubernetesVersion
	}
	r, err := parseRelease(v)
	if err != nil {
		r.err = fmt.Errorf("%s: %w; unset it for the default", VersionEnv, err)
	}
	return r
}

// CheckVersion says why v (like v1.35.4) is not a release the local
// control plane can be built and started at; nil if it is.
func CheckVersion(v string) error {
	_, err := parseRelease(v)
	return err
}

// parseRelease reads a version like v1.35.4. Its staging modules are
// v0.35.4, as for every release since 1.17.
func parseRelease(v string) (release, error) {
	m := releasePattern.FindStringSubmatch(v)
	if m == nil {
		return release{version: v}, fmt.Errorf("%q is not a Kubernetes release: expected v1.<minor>.<patch>, e.g. %s", v, DefaultKubernetesVersion)
	}
	minor, _ := strconv.Atoi(m[1])
	r := release{version: v, staging: "v0." + m[1] + "." + m[2], minor: minor}
	if minor < OldestMinor {
		return r, fmt.Errorf("%s is older than the oldest minor metawatch is tested on (1.%d): pick v1.%d or newer", v, OldestMinor, OldestMinor)
	}
	return r, nil
}

// OldestMinor is the oldest Kubernetes minor version the local control plane
// knows how to start (its feature gates and flags).
const OldestMinor = 34

// featureGatesOf are the gates switched on at a minor version: the alpha
// ShardedListAndWatch (KEP-5866) exists from 1.36 only.
func featureGatesOf(minor int) string {
	if minor >= ShardedListAndWatchMinor {
		return "ShardedListAndWatch=true"
	}
	return ""
}

// artifact is one binary: the wrapper module it builds in, the package, and how
// to tell a valid cached copy (its --version output names the expected version).
type artifact struct {
	name        string
	module      wrapperModule
	pkg         string
	ldflags     string
	versionArgs []string
	versionWant string
	// version is what the progress line names; "" for the names versionOf knows.
	version string
	// env is added to the build's environment (CGO_ENABLED=0 for a static binary).
	env []string
}

func artifacts() []artifact {
	k8sLdflags := kubernetesLdflags()
	return []artifact{
		{
			name: "kube-apiserver", module: kubernetesModule(), pkg: "k8s.io/kubernetes/cmd/kube-apiserver",
			ldflags: k8sLdflags, versionArgs: []string{"--version"}, versionWant: "Kubernetes " + KubernetesVersion,
		},
		{
			name: "kubectl", module: kubernetesModule(), pkg: "k8s.io/kubernetes/cmd/kubectl",
			ldflags: k8sLdflags, versionArgs: []string{"version", "--client"}, versionWant: "Client Version: " + KubernetesVersion,
		},
		{
			name: "etcd", module: etcdModule(), pkg: "go.etcd.io/etcd/server/v3",
			versionArgs: []string{"--version"}, versionWant: "etcd Version: " + EtcdVersion[1:],
		},
	}
}

// nodeArtifacts are the binaries of a node and of the rest of a control
// plane (hack/onenode): built like kube-apiserver, only when a cluster is asked for.
func nodeArtifacts() []artifact {
	var out []artifact
	for _, name := range []string{"kubelet", "kube-scheduler", "kube-controller-manager", "kube-proxy"} {
		out = append(out, kubernetesCommand(name))
	}
	return out
}

// kubernetesCommand is k8s.io/kubernetes/cmd/<name> of KubernetesVersion.
func kubernetesCommand(name string) artifact {
	return artifact{
		name: name, module: kubernetesModule(), pkg: "k8s.io/kubernetes/cmd/" + name,
		ldflags: kubernetesLdflags(), versionArgs: []string{"--version"}, versionWant: "Kubernetes " + KubernetesVersion,
	}
}

// kubernetesLdflags stamps the version the binaries report: without it they
// report v0.0.0-master, which would make the cache check meaningless. The
// minor matters too: the server's compatibility version derives from it.
func kubernetesLdflags() string {
	flags := ""
	for _, pkg := range []string{"k8s.io/component-base/version", "k8s.io/client-go/pkg/version"} {
		flags += " -X " + pkg + ".gitVersion=" + KubernetesVersion +
			" -X " + pkg + ".gitMajor=1 -X " + pkg + ".gitMinor=" + strconv.Itoa(KubernetesMinor)
	}
	return flags[1:]
}
