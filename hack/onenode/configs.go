package onenode

import (
	"encoding/base64"
	"fmt"
)

func encodeBase64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

// Addresses inside the cluster's network namespace. The node (API server,
// kubelet) is nodeIP on the namespace's end of a veth pair whose host end is
// hostIP, so clients on the host reach the API server at an address of the
// namespace this package created, and nothing else.
const (
	hostIP        = "10.200.1.1"
	nodeIP        = "10.200.1.2"
	vethPrefixLen = 24
	serviceCIDR   = "10.96.0.0/24"
	serviceIP     = "10.96.0.1" // the kubernetes Service
	podCIDR       = "10.244.0.0/24"
	clusterCIDR   = "10.244.0.0/16"
	apiPort       = 6443
	nodeName      = "metawatch-node"
	// PauseImage is the sandbox image, built locally (no registry here).
	PauseImage = "docker.io/local/pause:1"
)

// containerdConfig is containerd 1.6's configuration: its own root, state
// and socket, the CRI plugin with the local pause image, cgroupfs (cgroup v1)
// and restrict_oom_score_adj (root here lacks CAP_SYS_RESOURCE, so runc
// cannot raise a sandbox's oom_score_adj).
func (l layout) containerdConfig() string {
	return fmt.Sprintf(`version = 2
root = %q
state = %q
[grpc]
  address = %q
[ttrpc]
  address = %q
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = %q
  restrict_oom_score_adj = true
  enable_selinux = false
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = %q
    conf_dir = %q
`, l.path("containerd", "root"), l.run("containerd"), l.containerdSocket(), l.run("containerd.ttrpc.sock"),
		PauseImage, cniBinDir, l.path("cni"))
}

// auditPolicy records the writes of ServiceAccounts (the workloads'), so
// tests can tell which replica wrote what, and when.
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: Metadata
  userGroups: ["system:serviceaccounts"]
  verbs: [create, update, patch, delete]
- level: None
`

// cniBinDir is where Debian's containernetworking-plugins are.
const cniBinDir = "/usr/lib/cni"

// cniConfig is a bridge network for the node's pods, with their traffic to
// other addresses masqueraded.
func cniConfig() string {
	return fmt.Sprintf(`{
  "cniVersion": "0.4.0",
  "name": "metawatch-cluster",
  "plugins": [
    {"type": "bridge", "bridge": "mwc0", "isGateway": true, "ipMasq": true, "hairpinMode": true,
     "ipam": {"type": "host-local", "ranges": [[{"subnet": %q}]], "routes": [{"dst": "0.0.0.0/0"}]}},
    {"type": "portmap", "capabilities": {"portMappings": true}}
  ]
}
`, podCIDR)
}

// kubeletConfig runs kubelet 1.36 on cgroup v1 (failCgroupV1: false,
// cgroupfs), against the project's containerd, with eviction thresholds low
// enough for a small machine.
func (l layout) kubeletConfig() string {
	return fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
failCgroupV1: false
cgroupDriver: cgroupfs
containerRuntimeEndpoint: unix://%s
failSwapOn: false
address: %s
port: 10250
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: 10248
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: %q}
authorization:
  mode: Webhook
evictionHard: {memory.available: "50Mi", nodefs.available: "1%%", imagefs.available: "1%%", nodefs.inodesFree: "1%%"}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
serializeImagePulls: false
podCIDR: %q
maxPods: 110
podLogsDir: %q
resolvConf: %q
`, l.containerdSocket(), nodeIP, l.pki().path("ca.crt"), podCIDR, l.path("pods-logs"), l.path("resolv.conf"))
}

// kubeProxyConfig routes Services with iptables inside the namespace; it
// leaves the host's conntrack table size alone (maxPerCore: 0).
func (l layout) kubeProxyConfig() string {
	return fmt.Sprintf(`apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection:
  kubeconfig: %q
mode: iptables
clusterCIDR: %q
hostnameOverride: %s
bindAddress: %s
healthzBindAddress: 127.0.0.1:10256
metricsBindAddress: 127.0.0.1:10249
conntrack:
  maxPerCore: 0
  min: 0
`, l.kubeconfigPath(), clusterCIDR, nodeName, nodeIP)
}
