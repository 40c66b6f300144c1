// Package onenode runs a one-node Kubernetes cluster on this machine, for
// `make cluster`, the tests of the chart on a real kubelet and the bench:
// etcd, kube-apiserver, kube-controller-manager, kube-scheduler, containerd,
// kubelet and kube-proxy, everything inside a network namespace of its own.
//
// # Why a network namespace
//
// Tests here may send traffic only to loopback or to addresses of namespaces
// they created. The node's address (10.200.1.2) is the namespace's end of a
// veth pair, so the host reaches the API server there and pods reach it
// through the kubernetes Service (kube-proxy's iptables rules, inside the
// namespace) as in any cluster. The namespace has no default route and pods
// no nameserver: nothing leaves the machine. Components enter only the
// network namespace (nsenter --net), not a mount namespace, so the kubelet's
// volume mounts are the ones containerd and runc see.
//
// The namespace routes the Service range to its loopback, so that a process
// on the node reaches a Service too (the route is looked up before
// kube-proxy's rules rewrite the address). DialContext connects from inside
// the namespace, as such a process would: tests and the bench scrape the
// chart's metrics through its Service that way.
//
// # What it builds and installs
//
// kubelet, kube-scheduler, kube-controller-manager and kube-proxy build from
// k8s.io/kubernetes like kube-apiserver (pkg/testing/controlplane), cached by version.
// containerd, runc, the CNI plugins, iptables and conntrack come from
// Debian's packages, installed with apt-get when missing (it says which):
// containerd 1.6 is enough for Kubernetes 1.36, whose kubelet still falls
// back to its configured cgroup driver when containerd does not report one;
// 1.37 drops that fallback, and with it containerd 1.6. The sandbox ("pause")
// image is built locally: there is no registry.
//
// # Settings that matter here
//
// kubelet 1.36 on cgroup v1 needs failCgroupV1: false and cgroupfs; root here
// lacks CAP_SYS_RESOURCE, so containerd runs with restrict_oom_score_adj.
//
// # Leaving nothing behind
//
// Stop deletes the workloads and waits for the node's pods (stopping the
// kubelet alone leaves containers running; pods bound to other nodes, such as
// the bench's simulated ones, have nothing here and no kubelet to finish
// their deletion, so it does not wait for them), stops the components in reverse order,
// then removes stray shims, mounts, the kubelet's cgroups, the namespace and
// every directory it made. Start first removes what a killed run left,
// killing its components first: they would hold the namespace, and the veth
// with it, after its name was deleted.
package onenode
