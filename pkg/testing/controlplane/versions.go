package controlplane

const (
	// KubernetesVersion is the k8s.io/kubernetes release kube-apiserver and kubectl are built from.
	KubernetesVersion = "v1.36.3"
	// StagingVersion is the published version of the k8s.io/* staging modules of KubernetesVersion.
	StagingVersion = "v0.36.3"
	// EtcdVersion is the go.etcd.io/etcd/server/v3 release etcd is built from.
	EtcdVersion = "v3.6.16"
	// FeatureGates are switched on in every local kube-apiserver.
	FeatureGates = "ShardedListAndWatch=true"
)

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
// report v0.0.0-master, which would make the cache check meaningless.
func kubernetesLdflags() string {
	flags := ""
	for _, pkg := range []string{"k8s.io/component-base/version", "k8s.io/client-go/pkg/version"} {
		flags += " -X " + pkg + ".gitVersion=" + KubernetesVersion +
			" -X " + pkg + ".gitMajor=1 -X " + pkg + ".gitMinor=36"
	}
	return flags[1:]
}
